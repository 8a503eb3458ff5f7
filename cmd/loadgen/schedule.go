package main

import (
	"errors"
	"fmt"
	"math"
	"math/rand"
	"sort"
)

// Record is one transaction's row of the output CSV (docs/interfaces.md).
// A time that never happened (not submitted, no answer) is 0.
type Record struct {
	TxID      string
	Scheduled int64 // ns: when the open-loop schedule says to send it
	Submitted int64 // ns: when it was actually handed to the Broadcast stream
	Acked     int64 // ns: when the orderer's BroadcastResponse arrived
	Status    string
}

// CSVHeader is the header of the output CSV.
const CSVHeader = "tx_id,scheduled_ns,submitted_ns,acked_ns,status"

// Schedule returns the send time of each of n transactions at rate tx/s
// starting at start (ns): start + i/rate. The schedule is fixed before the
// first send, so a sender that falls behind shows up as lag instead of
// shifting later transactions (no coordinated omission).
func Schedule(n int, rate float64, start int64) []int64 {
	out := make([]int64, n)
	for i := range out {
		out[i] = start + int64(math.Round(float64(i)*1e9/rate))
	}
	return out
}

// LagStats returns the largest and the 99th-percentile (nearest rank) lag,
// submitted - scheduled, over the records that were submitted.
func LagStats(recs []Record) (maxLag, p99 int64) {
	var lags []int64
	for _, r := range recs {
		if r.Submitted == 0 || r.Scheduled == 0 {
			continue
		}
		lags = append(lags, r.Submitted-r.Scheduled)
	}
	if len(lags) == 0 {
		return 0, 0
	}
	sort.Slice(lags, func(i, j int) bool { return lags[i] < lags[j] })
	rank := int(math.Ceil(0.99*float64(len(lags)))) - 1
	return lags[len(lags)-1], lags[rank]
}

// Summary is the JSON line loadgen prints on exit.
type Summary struct {
	Sent      int     `json:"sent"`
	Acked     int     `json:"acked"`
	Failed    int     `json:"failed"`
	TargetTPS float64 `json:"target_tps"`
	MaxLagNs  int64   `json:"max_lag_ns"`
	P99LagNs  int64   `json:"p99_lag_ns"`
	Duration  int64   `json:"duration_ns"`
}

// Summarize computes the summary of a broadcast phase: sent counts
// submitted transactions, acked those answered SUCCESS, failed all others;
// the duration runs from the first submission to the last answer. Lag is
// reported for open loop only (rate > 0).
func Summarize(recs []Record, rate float64) Summary {
	s := Summary{TargetTPS: rate}
	var first, last int64
	for _, r := range recs {
		if r.Submitted != 0 {
			s.Sent++
			if first == 0 || r.Submitted < first {
				first = r.Submitted
			}
		}
		if r.Status == "SUCCESS" {
			s.Acked++
		} else {
			s.Failed++
		}
		if r.Acked > last {
			last = r.Acked
		}
	}
	if first != 0 && last > first {
		s.Duration = last - first
	}
	if rate > 0 {
		s.MaxLagNs, s.P99LagNs = LagStats(recs)
	}
	return s
}

// Transfer is one planned transfer between two account indexes.
type Transfer struct{ From, To int }

// PlanTransfers chooses the accounts of n transfers. By default each uses
// two accounts no earlier transfer used, so all can be valid together. With
// probability conflictRate (never for the first) a transfer instead takes its
// source from an account an earlier transfer of this run used: all
// transfers are endorsed against the same state, so whichever of the two the
// orderer puts second fails MVCC validation.
func PlanTransfers(n, accounts int, conflictRate float64, seed int64) ([]Transfer, error) {
	rng := rand.New(rand.NewSource(seed))
	plan := make([]Transfer, n)
	var used []int
	next := 0
	fresh := func() (int, error) {
		if next >= accounts {
			return 0, fmt.Errorf("%d transfers need more than the %d accounts configured; raise accounts (2 per conflict-free transfer)", n, accounts)
		}
		next++
		return next - 1, nil
	}
	for i := range plan {
		var err error
		if i > 0 && conflictRate > 0 && rng.Float64() < conflictRate {
			plan[i].From = used[rng.Intn(len(used))]
		} else if plan[i].From, err = fresh(); err != nil {
			return nil, err
		}
		if plan[i].To, err = fresh(); err != nil {
			return nil, err
		}
		used = append(used, plan[i].From, plan[i].To)
	}
	if n > 0 && accounts < 2 {
		return nil, errors.New("at least two accounts are needed")
	}
	return plan, nil
}
