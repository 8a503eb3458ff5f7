package policy_test

import (
	"errors"
	"testing"

	"fabricrepro/internal/committer/txgen"
	"fabricrepro/internal/policy"
)

// signatures is a network and two signatures by its peer: one valid, one
// over other bytes than it claims.
func signatures(t *testing.T) (n *txgen.Network, good, bad policy.SignedData) {
	t.Helper()
	n, err := txgen.NewNetwork(t.TempDir(), "mychannel", 1)
	if err != nil {
		t.Fatal(err)
	}
	data := []byte("proposal response")
	sig, err := n.Peer.Sign(data)
	if err != nil {
		t.Fatal(err)
	}
	good = policy.SignedData{Identity: n.Peer.Serialize(), Data: data, Signature: sig}
	bad = policy.SignedData{Identity: n.Peer.Serialize(), Data: []byte("other"), Signature: sig}
	return n, good, bad
}

// TestEvaluateDeduplicatesBeforeVerifying is Fabric 1.2's deduplicate
// (common/cauthdsl/cauthdsl.go:24-43): a signer's first signature is the
// one that counts, so a valid repeat cannot rescue an invalid first one, and
// a signer counts once however often it signs.
func TestEvaluateDeduplicatesBeforeVerifying(t *testing.T) {
	n, good, bad := signatures(t)
	any, err := policy.Compile(policy.SignedByAnyMember("Org1MSP"), n.Bundle.MSPs)
	if err != nil {
		t.Fatal(err)
	}
	if err := any.Evaluate([]policy.SignedData{good, bad}); err != nil {
		t.Errorf("valid then invalid: %v, want satisfied", err)
	}
	if err := any.Evaluate([]policy.SignedData{bad, good}); !errors.Is(err, policy.ErrPolicyNotSatisfied) {
		t.Errorf("invalid then valid: %v, want ErrPolicyNotSatisfied", err)
	}
	both, err := policy.Compile(policy.SignedByEachMember("Org1MSP", "Org1MSP"), n.Bundle.MSPs)
	if err != nil {
		t.Fatal(err)
	}
	if err := both.Evaluate([]policy.SignedData{good, good}); !errors.Is(err, policy.ErrPolicyNotSatisfied) {
		t.Errorf("one signer twice for AND(member, member): %v, want ErrPolicyNotSatisfied", err)
	}
}

// TestValidIdentitiesFabric2 is SignatureSetToValidIdentities
// (common/policies/policy.go:363-395 of v2.5 and v3.1): a signer's first
// valid signature counts, after an invalid one.
func TestValidIdentitiesFabric2(t *testing.T) {
	n, good, bad := signatures(t)
	unknown := policy.SignedData{Identity: []byte("not an identity"), Data: good.Data, Signature: good.Signature}
	for _, c := range []struct {
		set       []policy.SignedData
		firstOnly bool
		want      int
	}{
		{[]policy.SignedData{bad, good}, false, 1},
		{[]policy.SignedData{bad, good}, true, 0},
		{[]policy.SignedData{good, good, unknown}, false, 1},
		{[]policy.SignedData{bad, unknown}, false, 0},
	} {
		if got := policy.ValidIdentities(c.set, n.Bundle.MSPs, c.firstOnly); len(got) != c.want {
			t.Errorf("%d signatures, firstOnly %v: %d identities, want %d", len(c.set), c.firstOnly, len(got), c.want)
		}
	}
}
