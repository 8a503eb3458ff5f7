package txverify

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	cb "fabricrepro/internal/protos/common"
	mspproto "fabricrepro/internal/protos/msp"
	"fabricrepro/internal/protoutil"
)

// DefaultPolicy is the endorsement policy our experiments instantiate their
// chaincode with (playbooks/roles/fabric_channel fabric_channel_endorsement_policy,
// playbooks/roles/loadgen {anyMemberOf: [Org1MSP]}, cmd/committerbench's
// txgen.Deploy): one signature of a member of Org1MSP, the one application
// organization of their channels.
const DefaultPolicy = "OR('Org1MSP.member')"

// DefaultPolicyOf is the policy assumed for a chaincode the ledger does not
// define when none is given: one signature of a member of any of the
// channel's application organizations. On our experiments' channels (Org1MSP
// alone) it is DefaultPolicy; on the channel of Fabric's sample MSP, which
// FastFabric's published benchmarks use, it is OR('SampleOrg.member'), the
// definition their database holds (systems/fabric-1.2 patch 0003).
func DefaultPolicyOf(application []string) string {
	if len(application) == 0 {
		return DefaultPolicy
	}
	var ps []string
	for _, id := range application {
		ps = append(ps, "'"+id+".member'")
	}
	return "OR(" + strings.Join(ps, ", ") + ")"
}

// principalRE is Fabric 1.2's principal syntax (common/cauthdsl/policyparser.go):
// an MSP ID, a dot, a role.
var principalRE = regexp.MustCompile(`^([[:alnum:].-]+)[.](member|admin|client|peer)$`)

// ParsePolicy turns Fabric's policy language (the peer CLI's -P: AND, OR and
// OutOf gates over 'MSPID.role' principals, gates in any letter case) into
// a SignaturePolicyEnvelope as Fabric's cauthdsl.FromString builds it: one
// principal per occurrence, numbered in order, AND(a, b) as 2-out-of, OR as
// 1-out-of. Our own parser: Fabric's goes through govaluate.
func ParsePolicy(s string) (*cb.SignaturePolicyEnvelope, error) {
	p := &policyParser{src: s}
	rule, err := p.expr()
	if err != nil {
		return nil, fmt.Errorf("policy %q: %w", s, err)
	}
	p.space()
	if p.pos != len(p.src) {
		return nil, fmt.Errorf("policy %q: unexpected %q at %d", s, p.src[p.pos:], p.pos)
	}
	if _, ok := rule.Type.(*cb.SignaturePolicy_SignedBy); ok {
		return nil, fmt.Errorf("policy %q: a principal must be inside a gate (AND, OR, OutOf)", s)
	}
	return &cb.SignaturePolicyEnvelope{Version: 0, Rule: rule, Identities: p.principals}, nil
}

type policyParser struct {
	src        string
	pos        int
	principals []*mspproto.MSPPrincipal
}

func (p *policyParser) space() {
	for p.pos < len(p.src) && strings.ContainsRune(" \t\r\n", rune(p.src[p.pos])) {
		p.pos++
	}
}

func (p *policyParser) expr() (*cb.SignaturePolicy, error) {
	p.space()
	if p.pos >= len(p.src) {
		return nil, fmt.Errorf("unexpected end")
	}
	if c := p.src[p.pos]; c == '\'' || c == '"' {
		return p.principal()
	}
	start := p.pos
	for p.pos < len(p.src) && (isLetter(p.src[p.pos])) {
		p.pos++
	}
	gate := strings.ToLower(p.src[start:p.pos])
	p.space()
	if p.pos >= len(p.src) || p.src[p.pos] != '(' {
		return nil, fmt.Errorf("expected a gate and '(' at %d", start)
	}
	p.pos++
	n := -1
	if gate == "outof" {
		p.space()
		numStart := p.pos
		for p.pos < len(p.src) && p.src[p.pos] >= '0' && p.src[p.pos] <= '9' {
			p.pos++
		}
		v, err := strconv.Atoi(p.src[numStart:p.pos])
		if err != nil {
			return nil, fmt.Errorf("OutOf needs a count first, at %d", numStart)
		}
		n = v
		p.space()
		if p.pos >= len(p.src) || p.src[p.pos] != ',' {
			return nil, fmt.Errorf("expected ',' after OutOf's count at %d", p.pos)
		}
		p.pos++
	} else if gate != "and" && gate != "or" {
		return nil, fmt.Errorf("unknown gate %q (AND, OR, OutOf)", p.src[start:p.pos])
	}
	var rules []*cb.SignaturePolicy
	for {
		r, err := p.expr()
		if err != nil {
			return nil, err
		}
		rules = append(rules, r)
		p.space()
		if p.pos >= len(p.src) {
			return nil, fmt.Errorf("unclosed %s(", gate)
		}
		if p.src[p.pos] == ',' {
			p.pos++
			continue
		}
		if p.src[p.pos] == ')' {
			p.pos++
			break
		}
		return nil, fmt.Errorf("expected ',' or ')' at %d", p.pos)
	}
	switch gate {
	case "and":
		n = len(rules)
	case "or":
		n = 1
	}
	return &cb.SignaturePolicy{Type: &cb.SignaturePolicy_NOutOf_{NOutOf: &cb.SignaturePolicy_NOutOf{N: int32(n), Rules: rules}}}, nil
}

func (p *policyParser) principal() (*cb.SignaturePolicy, error) {
	quote := p.src[p.pos]
	end := strings.IndexByte(p.src[p.pos+1:], quote)
	if end < 0 {
		return nil, fmt.Errorf("unterminated principal at %d", p.pos)
	}
	text := p.src[p.pos+1 : p.pos+1+end]
	p.pos += end + 2
	m := principalRE.FindStringSubmatch(text)
	if m == nil {
		return nil, fmt.Errorf("principal %q is not MSPID.member|admin|client|peer", text)
	}
	role := map[string]mspproto.MSPRole_MSPRoleType{"member": mspproto.MSPRole_MEMBER, "admin": mspproto.MSPRole_ADMIN,
		"client": mspproto.MSPRole_CLIENT, "peer": mspproto.MSPRole_PEER}[m[2]]
	p.principals = append(p.principals, &mspproto.MSPPrincipal{PrincipalClassification: mspproto.MSPPrincipal_ROLE,
		Principal: protoutil.MarshalOrPanic(&mspproto.MSPRole{MspIdentifier: m[1], Role: role})})
	return &cb.SignaturePolicy{Type: &cb.SignaturePolicy_SignedBy{SignedBy: int32(len(p.principals) - 1)}}, nil
}

func isLetter(c byte) bool { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') }
