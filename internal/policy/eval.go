package policy

import (
	"errors"
	"fmt"

	cb "fabricrepro/internal/protos/common"
)

// ErrPolicyNotSatisfied is returned when the valid signatures do not satisfy
// the policy.
var ErrPolicyNotSatisfied = errors.New("signature set did not satisfy policy")

// Signers is what a signature policy is evaluated over: signers already
// verified and deduplicated (each Fabric version does that its own way, so
// the callers do it), and whether signer j satisfies the envelope's
// principal i (msp SatisfiesPrincipal, which also differs by version).
type Signers interface {
	Len() int
	Satisfies(principal, signer int) bool
}

// CheckRule rejects the trees Fabric's cauthdsl compile rejects (v1.2.0
// common/cauthdsl/cauthdsl.go:47-125, v2.5.16 and v3.1.5 cauthdsl.go:24-91):
// an empty element, a signed_by outside the envelope's principals, a rule
// without a type. An n_out_of without a body, on which Fabric would panic, is
// an error here.
func CheckRule(r *cb.SignaturePolicy, nPrincipals int) error {
	if r == nil {
		return errors.New("empty policy element")
	}
	switch t := r.Type.(type) {
	case *cb.SignaturePolicy_SignedBy:
		if t.SignedBy < 0 || int(t.SignedBy) >= nPrincipals {
			return fmt.Errorf("signed_by %d out of range of %d principals", t.SignedBy, nPrincipals)
		}
	case *cb.SignaturePolicy_NOutOf_:
		if t.NOutOf == nil {
			return errors.New("empty n_out_of")
		}
		for _, sub := range t.NOutOf.Rules {
			if err := CheckRule(sub, nPrincipals); err != nil {
				return err
			}
		}
	default:
		return errors.New("signature policy rule has no type")
	}
	return nil
}

// Evaluate is cauthdsl's evaluation of rule over s, the one walk every
// verifier here uses: a signed_by takes the first signer not yet used that
// satisfies its principal and marks it used, so a signer counts once in the
// whole tree; an n_out_of holds when at least N of its rules hold. It checks
// the tree first (CheckRule) and returns ErrPolicyNotSatisfied when the
// signers do not satisfy it.
func Evaluate(rule *cb.SignaturePolicy, nPrincipals int, s Signers) error {
	if err := CheckRule(rule, nPrincipals); err != nil {
		return err
	}
	if !holds(rule, s, make([]bool, s.Len())) {
		return ErrPolicyNotSatisfied
	}
	return nil
}

func holds(r *cb.SignaturePolicy, s Signers, used []bool) bool {
	switch t := r.Type.(type) {
	case *cb.SignaturePolicy_SignedBy:
		// v2.5.16 cauthdsl.go:66-87 (v1.2.0 :89-122, which also verifies the
		// signature here; our callers have verified it before).
		for j := range used {
			if !used[j] && s.Satisfies(int(t.SignedBy), j) {
				used[j] = true
				return true
			}
		}
		return false
	case *cb.SignaturePolicy_NOutOf_:
		// v2.5.16 cauthdsl.go:40-59 (v1.2.0 :63-82): each rule works on a copy
		// of used, kept only when the rule holds, so a rule that fails
		// consumes no signer its siblings could use.
		verified := int32(0)
		trial := make([]bool, len(used))
		for _, sub := range t.NOutOf.Rules {
			copy(trial, used)
			if holds(sub, s, trial) {
				verified++
				copy(used, trial)
			}
		}
		return verified >= t.NOutOf.N
	}
	return false
}
