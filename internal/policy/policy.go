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
	env      *cb.SignaturePolicyEnvelope
	mgr      *msp.Manager
	roles    []*mspproto.MSPRole
}

// ErrPolicyNotSatisfied is returned when the valid signatures do not satisfy
// the policy.
var ErrPolicyNotSatisfied = errors.New("signature set did not satisfy policy")

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
	if err := checkRule(env.Rule, len(p.roles)); err != nil {
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

func checkRule(r *cb.SignaturePolicy, nIdentities int) error {
	switch t := r.Type.(type) {
	case *cb.SignaturePolicy_SignedBy:
		if int(t.SignedBy) < 0 || int(t.SignedBy) >= nIdentities {
			return fmt.Errorf("signed_by %d out of range", t.SignedBy)
		}
	case *cb.SignaturePolicy_NOutOf_:
		if t.NOutOf == nil {
			return errors.New("empty n_out_of")
		}
		for _, sub := range t.NOutOf.Rules {
			if err := checkRule(sub, nIdentities); err != nil {
				return err
			}
		}
	default:
		return errors.New("signature policy rule has no type")
	}
	return nil
}

// Evaluate verifies each signature (skipping invalid ones and repeated
// signers, as Fabric does) and checks that the remaining identities satisfy
// the policy.
func (p *Policy) Evaluate(sigs []SignedData) error {
	ids := make([]*msp.Identity, 0, len(sigs))
	seen := map[string]bool{}
	for _, s := range sigs {
		id, err := p.mgr.DeserializeIdentity(s.Identity)
		if err != nil {
			continue
		}
		if seen[string(s.Identity)] {
			continue
		}
		if id.Verify(s.Data, s.Signature) != nil {
			continue
		}
		seen[string(s.Identity)] = true
		ids = append(ids, id)
	}
	used := make([]bool, len(ids))
	if !p.eval(p.env.Rule, ids, used) {
		return ErrPolicyNotSatisfied
	}
	return nil
}

func (p *Policy) eval(r *cb.SignaturePolicy, ids []*msp.Identity, used []bool) bool {
	switch t := r.Type.(type) {
	case *cb.SignaturePolicy_SignedBy:
		role := p.roles[t.SignedBy]
		for i, id := range ids {
			if !used[i] && satisfies(id, role) {
				used[i] = true
				return true
			}
		}
		return false
	case *cb.SignaturePolicy_NOutOf_:
		// Work on a copy so a failed branch does not consume signers.
		trial := append([]bool(nil), used...)
		n := 0
		for _, sub := range t.NOutOf.Rules {
			if p.eval(sub, ids, trial) {
				n++
			}
		}
		if n >= int(t.NOutOf.N) {
			copy(used, trial)
			return true
		}
		return false
	}
	return false
}

func satisfies(id *msp.Identity, role *mspproto.MSPRole) bool {
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
	return false // ADMIN needs admin certs, which the reference MSP does not carry
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
