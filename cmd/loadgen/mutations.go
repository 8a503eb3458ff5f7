package main

import (
	"bufio"
	"fmt"
	"math"
	"os"
	"sort"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// The mutation kinds, as mutations.csv names them (docs/validity.md, item 2;
// harness/validity.py): the code the committing peer must give each.
const (
	// BadCreator: the creator's envelope signature is corrupted after
	// endorsement (BAD_CREATOR_SIGNATURE). A Fabric 1.x orderer checks the
	// same signature against the channel's Writers policy at broadcast
	// (orderer/common/msgprocessor/sigfilter.go) and answers FORBIDDEN, so
	// on a real network such a transfer never reaches a block.
	BadCreator = "bad_creator"
	// BadEndorsement: the endorser's signature is corrupted
	// (ENDORSEMENT_POLICY_FAILURE).
	BadEndorsement = "bad_endorsement"
	// StaleRead: the transfer reads an account an earlier valid transfer of
	// its broadcast stream writes; both are endorsed against the same state,
	// so by the time it is validated the version it read has been overwritten
	// (MVCC_READ_CONFLICT).
	StaleRead = "stale_read"
)

// MutationsHeader is the header of mutations.csv (harness/collect.py's
// table mutations). The client does not know where its transactions land,
// so block_number and tx_index are -1; the harness matches rows by tx_id.
const MutationsHeader = "block_number,tx_index,tx_id,mutation"

// Share is a number of transfers, given as a count ("3") or as a fraction of
// transfer.transactions ("0.0075", "1.0", "1e-3"): a value with a decimal
// point or an exponent is a fraction, rounded to the nearest count.
type Share struct {
	count      int
	fraction   float64
	isFraction bool
}

// ParseShare reads a Share from its text.
func ParseShare(s string) (Share, error) {
	s = strings.TrimSpace(s)
	if strings.ContainsAny(s, ".eE") {
		f, err := strconv.ParseFloat(s, 64)
		if err != nil || !(f >= 0 && f <= 1) {
			return Share{}, fmt.Errorf("%q is not a fraction between 0 and 1", s)
		}
		return Share{fraction: f, isFraction: true}, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		return Share{}, fmt.Errorf("%q is neither a count (a whole number, 0 or more) nor a fraction (with a decimal point, e.g. 0.01)", s)
	}
	return Share{count: n}, nil
}

// Count is a count of transfers.
func Count(n int) Share { return Share{count: n} }

// Of returns the number of transfers the share is of n transfers.
func (s Share) Of(n int) int {
	if s.isFraction {
		return int(math.Round(s.fraction * float64(n)))
	}
	return s.count
}

func (s Share) String() string {
	if s.isFraction {
		return strconv.FormatFloat(s.fraction, 'g', -1, 64)
	}
	return strconv.Itoa(s.count)
}

// UnmarshalYAML reads a count (an integer) or a fraction (a float).
func (s *Share) UnmarshalYAML(n *yaml.Node) error {
	if tag := n.ShortTag(); n.Kind != yaml.ScalarNode || (tag != "!!int" && tag != "!!float") {
		return fmt.Errorf("line %d: %q is neither a count nor a fraction of the transfers", n.Line, n.Value)
	}
	v, err := ParseShare(n.Value)
	if err != nil {
		return fmt.Errorf("line %d: %v", n.Line, err)
	}
	*s = v
	return nil
}

// Mutation is one transfer the load generator corrupts on purpose.
type Mutation struct {
	// Index of the transfer in the run (plan order, the order sent).
	Index int
	Kind  string
	// Writer is, for a stale read, the earlier unmutated transfer of the same
	// broadcast stream whose source account the stale read reads; -1 otherwise.
	Writer int
}

// PlanMutations chooses creator + endorsement + stale of n transfers, evenly
// spaced over the run (transfer floor((2m+1)n/2M) for m < M, M the total)
// and interleaved by kind (each kind itself spread evenly over those
// places). Each stale read gets as writer the nearest earlier transfer of its
// broadcast stream (transfer i is sent on stream i % streams) that is not
// mutated: a stream's envelopes are ordered in the order sent, so the writer
// always commits first. Returns the mutations in transfer order.
func PlanMutations(n, streams, creator, endorsement, stale int) ([]Mutation, error) {
	counts := []struct {
		kind string
		c    int
	}{{BadCreator, creator}, {BadEndorsement, endorsement}, {StaleRead, stale}}
	total := 0
	for _, k := range counts {
		if k.c < 0 || k.c > n {
			return nil, fmt.Errorf("%d %s mutations of %d transfers", k.c, k.kind, n)
		}
		total += k.c
	}
	if total > n {
		return nil, fmt.Errorf("the mutations add up to %d of %d transfers", total, n)
	}
	if total == 0 {
		return nil, nil
	}
	if streams < 1 {
		streams = 1
	}
	// The kinds in the order of their j-th item's place (j+½)/count: each kind evenly spread.
	type slot struct {
		key  float64
		rank int
		kind string
	}
	var order []slot
	for rank, k := range counts {
		for j := 0; j < k.c; j++ {
			order = append(order, slot{(float64(j) + 0.5) / float64(k.c), rank, k.kind})
		}
	}
	sort.SliceStable(order, func(a, b int) bool {
		if order[a].key != order[b].key {
			return order[a].key < order[b].key
		}
		return order[a].rank < order[b].rank
	})
	out := make([]Mutation, total)
	mutated := make(map[int]bool, total)
	for m := range out {
		i := int((2*int64(m) + 1) * int64(n) / (2 * int64(total)))
		out[m] = Mutation{Index: i, Kind: order[m].kind, Writer: -1}
		mutated[i] = true
	}
	for m := range out {
		if out[m].Kind != StaleRead {
			continue
		}
		i := out[m].Index
		j := i - streams
		for j >= 0 && mutated[j] {
			j -= streams
		}
		if j < 0 {
			return nil, fmt.Errorf("stale read at transfer %d has no earlier unmutated transfer on its broadcast stream "+
				"(%d streams) to overwrite what it reads: send more transfers or fewer mutations", i, streams)
		}
		out[m].Writer = j
	}
	return out, nil
}

// applyStaleReads makes each stale read take its writer's source account as
// its own source (the account both read and the writer writes).
func applyStaleReads(plan []Transfer, muts []Mutation) {
	for _, m := range muts {
		if m.Kind == StaleRead {
			plan[m.Index].From = plan[m.Writer].From
		}
	}
}

// writeMutations writes mutations.csv: one row per mutated transfer, in
// transfer order, block_number and tx_index -1 (unknown to the client).
func writeMutations(path string, muts []Mutation, txs []Endorsed) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	fmt.Fprintln(w, MutationsHeader)
	for _, m := range muts {
		fmt.Fprintf(w, "-1,-1,%s,%s\n", txs[m.Index].TxID, m.Kind)
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// refusals describes the mutated transfers the orderer did not accept, e.g.
// "bad_creator: 3 FORBIDDEN"; "" when it accepted them all.
func refusals(muts []Mutation, recs []Record) (int, string) {
	by := map[string]map[string]int{}
	n := 0
	for _, m := range muts {
		if st := recs[m.Index].Status; st != "SUCCESS" {
			if by[m.Kind] == nil {
				by[m.Kind] = map[string]int{}
			}
			by[m.Kind][st]++
			n++
		}
	}
	var parts []string
	for _, kind := range []string{BadCreator, BadEndorsement, StaleRead} {
		var sts []string
		for st := range by[kind] {
			sts = append(sts, st)
		}
		sort.Strings(sts)
		for _, st := range sts {
			parts = append(parts, fmt.Sprintf("%s: %d %s", kind, by[kind][st], st))
		}
	}
	return n, strings.Join(parts, ", ")
}
