// Package policy evaluates Fabric's signature policies (SignaturePolicyEnvelope,
// "cauthdsl" in Fabric 1.2): n-out-of trees over MSP principals, where every
// signature is verified and each signer counts at most once.
package policy

import (
	"errors"
	"fmt"

	"google.golang.org/protobuf/proto"

	"fabricrepro/internal/msp"
	cb "fabricrepro/internal/protos/common"
	mspproto "fabricrepro/internal/protos/msp"
)

// SignedData is one signature to evaluate: the signer's serialized identity,
// the bytes signed and the signature.
type SignedData struct {
	Identity  []byte
	Data      []byte
	Signature []byte
}

// Policy is a compiled signature policy bound to a channel's MSP manager.
type Policy struct {
	env   *cb.SignaturePolicyEnvelope
	mgr   *msp.Manager
	roles []*mspproto.MSPRole
}

// Compile prepares an envelope for evaluation against mgr's identities.
func Compile(env *cb.SignaturePolicyEnvelope, mgr *msp.Manager) (*Policy, error) {
	if env == nil || env.Rule == nil {
		return nil, errors.New("empty signature policy")
	}
	p := &Policy{env: env, mgr: mgr}
	for i, pr := range env.Identities {
		if pr.PrincipalClassification != mspproto.MSPPrincipal_ROLE {
			return nil, fmt.Errorf("principal %d: only ROLE principals are supported", i)
		}
		role := &mspproto.MSPRole{}
		if err := proto.Unmarshal(pr.Principal, role); err != nil {
			return nil, fmt.Errorf("principal %d: %w", i, err)
		}
		p.roles = append(p.roles, role)
	}
	if err := CheckRule(env.Rule, len(p.roles)); err != nil {
		return nil, err
	}
	return p, nil
}

// Unmarshal compiles the marshaled SignaturePolicyEnvelope in raw.
func Unmarshal(raw []byte, mgr *msp.Manager) (*Policy, error) {
	env := &cb.SignaturePolicyEnvelope{}
	if err := proto.Unmarshal(raw, env); err != nil {
		return nil, fmt.Errorf("malformed signature policy: %w", err)
	}
	return Compile(env, mgr)
}

// Evaluate verifies the signatures and checks that their signers satisfy
// the policy, the signers deduplicated as Fabric 1.2 does (ValidIdentities).
func (p *Policy) Evaluate(sigs []SignedData) error {
	ids := ValidIdentities(sigs, p.mgr, true)
	return Evaluate(p.env.Rule, len(p.roles), IdentitySigners(ids, func(i int, id *msp.Identity) bool {
		return SatisfiesRole(id, p.roles[i])
	}))
}

// ValidIdentities keeps the signers whose identity mgr deserializes and
// whose signature verifies, each once (by MSP ID and certificate). Fabric
// 2.x and 3.x (common/policies/policy.go:363-395
// SignatureSetToValidIdentities) count a signer's first valid signature;
// Fabric 1.2 (common/cauthdsl/cauthdsl.go:24-43 deduplicate) its first
// signature, valid or not, so that a valid repeat cannot stand in for an
// invalid first one: firstOnly asks for 1.2's.
func ValidIdentities(sigs []SignedData, mgr *msp.Manager, firstOnly bool) []*msp.Identity {
	ids := make([]*msp.Identity, 0, len(sigs))
	seen := map[string]bool{}
	for _, s := range sigs {
		id, err := mgr.DeserializeIdentity(s.Identity)
		if err != nil {
			continue
		}
		key := id.MSPID + "\x00" + string(id.Cert.Raw)
		if seen[key] {
			continue
		}
		if firstOnly {
			seen[key] = true
		}
		if id.Verify(s.Data, s.Signature) != nil {
			continue
		}
		seen[key] = true
		ids = append(ids, id)
	}
	return ids
}

// IdentitySigners is Signers over verified identities: match says whether the identity
// satisfies principal i of the envelope being evaluated.
func IdentitySigners(ids []*msp.Identity, match func(principal int, id *msp.Identity) bool) Signers {
	return identities{ids, match}
}

type identities struct {
	ids   []*msp.Identity
	match func(int, *msp.Identity) bool
}

func (s identities) Len() int { return len(s.ids) }

func (s identities) Satisfies(principal, signer int) bool { return s.match(principal, s.ids[signer]) }

// SatisfiesRole is Fabric 1.2's check of a ROLE principal (msp/mspimpl.go:433-533
// satisfiesPrincipalInternalPreV13): the MSP ID, and for peer and client the
// NodeOU. ADMIN needs admin certificates, which our MSP does not carry;
// admin and orderer NodeOUs came with Fabric 1.4.3, and the v2 rules
// (internal/txverify) add them.
func SatisfiesRole(id *msp.Identity, role *mspproto.MSPRole) bool {
	if id.MSPID != role.MspIdentifier {
		return false
	}
	switch role.Role {
	case mspproto.MSPRole_MEMBER:
		return true
	case mspproto.MSPRole_PEER:
		return id.HasOU(msp.OUPeer)
	case mspproto.MSPRole_CLIENT:
		return id.HasOU(msp.OUClient)
	}
	return false
}

// SignedByAnyMember returns "1 of" MEMBER of any of the MSPs (Fabric's
// default endorsement policy with one org: OR('Org1MSP.member')).
func SignedByAnyMember(mspIDs ...string) *cb.SignaturePolicyEnvelope {
	return nOutOfMembers(1, mspIDs)
}

// SignedByEachMember returns "N of N" MEMBER of the MSPs (AND(...)).
func SignedByEachMember(mspIDs ...string) *cb.SignaturePolicyEnvelope {
	return nOutOfMembers(int32(len(mspIDs)), mspIDs)
}

func nOutOfMembers(n int32, mspIDs []string) *cb.SignaturePolicyEnvelope {
	env := &cb.SignaturePolicyEnvelope{Version: 0}
	var rules []*cb.SignaturePolicy
	for i, id := range mspIDs {
		role, _ := proto.Marshal(&mspproto.MSPRole{MspIdentifier: id, Role: mspproto.MSPRole_MEMBER})
		env.Identities = append(env.Identities, &mspproto.MSPPrincipal{
			PrincipalClassification: mspproto.MSPPrincipal_ROLE, Principal: role})
		rules = append(rules, &cb.SignaturePolicy{Type: &cb.SignaturePolicy_SignedBy{SignedBy: int32(i)}})
	}
	env.Rule = &cb.SignaturePolicy{Type: &cb.SignaturePolicy_NOutOf_{NOutOf: &cb.SignaturePolicy_NOutOf{N: n, Rules: rules}}}
	return env
}
