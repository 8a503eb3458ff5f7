package policy

import (
	"errors"
	"testing"

	cb "fabricrepro/internal/protos/common"
)

// table is a test double for Signers: signer j satisfies principal i when
// sat[j] lists i.
type table [][]int

func (t table) Len() int { return len(t) }

func (t table) Satisfies(principal, signer int) bool {
	for _, p := range t[signer] {
		if p == principal {
			return true
		}
	}
	return false
}

func by(i int32) *cb.SignaturePolicy {
	return &cb.SignaturePolicy{Type: &cb.SignaturePolicy_SignedBy{SignedBy: i}}
}

func outOf(n int32, rules ...*cb.SignaturePolicy) *cb.SignaturePolicy {
	return &cb.SignaturePolicy{Type: &cb.SignaturePolicy_NOutOf_{NOutOf: &cb.SignaturePolicy_NOutOf{N: n, Rules: rules}}}
}

func TestEvaluateCauthdslSemantics(t *testing.T) {
	cases := []struct {
		name    string
		rule    *cb.SignaturePolicy
		signers table
		holds   bool
	}{
		{"one of one", outOf(1, by(0)), table{{0}}, true},
		{"no signer", outOf(1, by(0)), table{}, false},
		{"wrong principal", outOf(1, by(0)), table{{1}}, false},
		// A signer counts once in the whole tree: AND(A, A) needs two.
		{"signer used once", outOf(2, by(0), by(0)), table{{0}}, false},
		{"two signers for two", outOf(2, by(0), by(0)), table{{0}, {0}}, true},
		{"2 of 3", outOf(2, by(0), by(1), by(2)), table{{2}, {0}}, true},
		{"2 of 3 short", outOf(2, by(0), by(1), by(2)), table{{2}, {2}}, false},
		// A failing gate gives back what its holding rules took:
		// OR(AND(A, B), A) with A alone holds in Fabric.
		{"failed gate consumes nothing", outOf(1, outOf(2, by(0), by(1)), by(0)), table{{0}}, true},
		// A holding gate keeps what it took: AND(OR(A), A) needs two A.
		{"held gate keeps its signers", outOf(2, outOf(1, by(0)), by(0)), table{{0}}, false},
		// Fabric is greedy, not a matching: principal 0 takes the first
		// signer that satisfies it, even where another assignment exists.
		{"greedy like Fabric", outOf(2, by(0), by(1)), table{{0, 1}, {0}}, false},
		{"greedy, other order", outOf(2, by(0), by(1)), table{{0}, {0, 1}}, true},
		{"zero of none", outOf(0), table{}, true},
	}
	for _, c := range cases {
		err := Evaluate(c.rule, 3, c.signers)
		if c.holds && err != nil {
			t.Errorf("%s: %v, want satisfied", c.name, err)
		}
		if !c.holds && !errors.Is(err, ErrPolicyNotSatisfied) {
			t.Errorf("%s: %v, want ErrPolicyNotSatisfied", c.name, err)
		}
	}
}

func TestCheckRuleRejectsWhatFabricCompileRejects(t *testing.T) {
	for name, r := range map[string]*cb.SignaturePolicy{
		"nil":             nil,
		"no type":         {},
		"out of range":    outOf(1, by(3)),
		"negative":        outOf(1, by(-1)),
		"nested nil rule": outOf(1, by(0), nil),
		"empty n_out_of":  {Type: &cb.SignaturePolicy_NOutOf_{}},
	} {
		err := Evaluate(r, 3, table{{0}})
		if err == nil || errors.Is(err, ErrPolicyNotSatisfied) {
			t.Errorf("%s: %v, want a malformed-policy error", name, err)
		}
	}
}
