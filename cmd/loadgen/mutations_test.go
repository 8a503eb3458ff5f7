package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"

	"fabricrepro/internal/config"
	"fabricrepro/internal/ledger/statedb"
	ordchannel "fabricrepro/internal/orderer/channel"
	"fabricrepro/internal/policy"
	cb "fabricrepro/internal/protos/common"
	ab "fabricrepro/internal/protos/orderer"
	pb "fabricrepro/internal/protos/peer"
	"fabricrepro/internal/protoutil"
	"fabricrepro/internal/validation"
	moneytransfer "fabricrepro/workloads/money-transfer"
)

func TestShareIsACountOrAFraction(t *testing.T) {
	for _, tc := range []struct {
		in   string
		of   int
		want int
	}{{"3", 400, 3}, {"0", 400, 0}, {"0.0075", 400, 3}, {"0.01", 200, 2}, {"1.0", 7, 7}, {"1", 7, 1}, {"1e-2", 300, 3}, {"0.5", 5, 3}} {
		s, err := ParseShare(tc.in)
		if err != nil || s.Of(tc.of) != tc.want {
			t.Errorf("%q of %d = %d, %v; want %d", tc.in, tc.of, s.Of(tc.of), err, tc.want)
		}
	}
	for _, bad := range []string{"-1", "1.5", "-0.1", "three", "", "2x"} {
		if _, err := ParseShare(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	// In loadgen.yaml: an integer is a count, a float a fraction; anything else names its line.
	base := "mspDir: d\nmspID: Org1MSP\ngenesisBlock: g\nendorsers: [a]\norderers: [o]\n"
	cfg := defaults()
	doc := base + "transfer:\n  transactions: 400\n  forgeEndorsement: 3\n  corruptCreator: 0.0075\n  staleRead: 1e-2\n"
	if err := config.Parse("lg.yaml", []byte(doc), &cfg); err != nil || cfg.check() != nil {
		t.Fatalf("%v %v", err, cfg.check())
	}
	tr := cfg.Transfer
	if tr.ForgeEndorsement.Of(400) != 3 || tr.CorruptCreator.Of(400) != 3 || tr.StaleRead.Of(400) != 4 {
		t.Fatalf("shares %v %v %v", tr.ForgeEndorsement, tr.CorruptCreator, tr.StaleRead)
	}
	for _, v := range []string{"[1]", "yes", "\"x\"", "2.5"} {
		cfg := defaults()
		err := config.Parse("lg.yaml", []byte(base+"transfer:\n  staleRead: "+v+"\n"), &cfg)
		if err == nil || !strings.Contains(err.Error(), "line 7") {
			t.Errorf("staleRead %s: %v", v, err)
		}
	}
	// More mutations than transfers is a configuration error of the transfer phase only.
	cfg = defaults()
	config.Parse("lg.yaml", []byte(base+"transfer:\n  transactions: 4\n  forgeEndorsement: 3\n  corruptCreator: 2\n"), &cfg)
	if err := cfg.check(); err == nil || !strings.Contains(err.Error(), "add up to 5 of 4") {
		t.Fatalf("5 mutations of 4 transfers: %v", err)
	}
	cfg.Phase = "setup"
	cfg.Setup.Policy.AnyMemberOf = []string{"Org1MSP"}
	if err := cfg.check(); err != nil {
		t.Fatalf("setup ignores the transfer mutations: %v", err)
	}
}

func TestPlanMutationsEvenlySpacedAndInterleaved(t *testing.T) {
	muts, err := PlanMutations(400, 4, 3, 3, 3)
	if err != nil {
		t.Fatal(err)
	}
	var idx []int
	kinds := map[string]int{}
	for m, mu := range muts {
		idx = append(idx, mu.Index)
		kinds[mu.Kind]++
		if m > 0 && (mu.Index-muts[m-1].Index < 44 || mu.Index-muts[m-1].Index > 45) {
			t.Fatalf("not evenly spaced (400/9): %v", idx)
		}
		if want := []string{BadCreator, BadEndorsement, StaleRead}[m%3]; mu.Kind != want {
			t.Fatalf("mutation %d is %s, want %s (interleaved)", m, mu.Kind, want)
		}
		if (mu.Kind == StaleRead) != (mu.Writer >= 0) {
			t.Fatalf("writer %+v", mu)
		}
	}
	if idx[0] != 22 || idx[8] != 377 || kinds[BadCreator] != 3 || kinds[BadEndorsement] != 3 || kinds[StaleRead] != 3 {
		t.Fatalf("places %v kinds %v", idx, kinds)
	}
	// A stale read's writer: the nearest earlier unmutated transfer of its broadcast stream.
	muts, err = PlanMutations(17, 3, 0, 4, 1) // at 1, 5, 8, 11, 15: the stale read at 8 skips 5 for 2
	if err != nil {
		t.Fatal(err)
	}
	if muts[2].Kind != StaleRead || muts[2].Index != 8 || muts[2].Writer != 2 {
		t.Fatalf("%+v", muts)
	}
	mutated := map[int]bool{}
	for _, m := range muts {
		mutated[m.Index] = true
	}
	for _, m := range muts {
		if m.Kind != StaleRead {
			continue
		}
		if m.Writer >= m.Index || (m.Index-m.Writer)%3 != 0 || mutated[m.Writer] {
			t.Fatalf("stale read %+v of %v", m, muts)
		}
		for j := m.Writer + 3; j < m.Index; j += 3 {
			if !mutated[j] {
				t.Fatalf("writer %d is not the nearest: %d is unmutated", m.Writer, j)
			}
		}
	}
	if _, err := PlanMutations(4, 4, 0, 0, 1); err == nil || !strings.Contains(err.Error(), "no earlier unmutated transfer") {
		t.Fatalf("a stale read without a writer: %v", err)
	}
	if muts, err := PlanMutations(100, 4, 0, 0, 0); muts != nil || err != nil {
		t.Fatalf("no mutations: %v %v", muts, err)
	}
}

// sigFilterOrderer is a TEST DOUBLE for a Fabric 1.x orderer's broadcast: it
// answers FORBIDDEN to an envelope whose creator signature does not satisfy
// the channel's Writers policy (the reference orderer's check, Fabric's
// SigFilter) and then ends the stream, as Fabric v1.2.0's handler does
// (orderer/common/broadcast/broadcast.go: return srv.Send(...)); SUCCESS
// otherwise. It keeps every envelope in arrival order, refused or not, so
// that the test can hand them all to the validator.
type sigFilterOrderer struct {
	ab.UnimplementedAtomicBroadcastServer
	writers *policy.Policy
	mu      sync.Mutex
	envs    []*cb.Envelope
}

func (f *sigFilterOrderer) Broadcast(st ab.AtomicBroadcast_BroadcastServer) error {
	return answerBroadcasts(st, func(env *cb.Envelope) (cb.Status, bool) {
		status := cb.Status_SUCCESS
		if sd, err := ordchannel.AsSignedData(env); err != nil || f.writers.Evaluate([]policy.SignedData{sd}) != nil {
			status = cb.Status_FORBIDDEN
		}
		f.mu.Lock()
		f.envs = append(f.envs, env)
		f.mu.Unlock()
		return status, status != cb.Status_SUCCESS
	})
}

// TestTransferMutationsAreExactlyTheValidatorsInvalid runs the setup and the
// transfer phase against the in-process endorser with all three mutations,
// then validates every envelope the orderer received, in arrival order, with
// the reference committer's validator and MVCC (Fabric 1.2's): exactly the
// transfers of mutations.csv are invalid, each with its kind's code, and the
// orderer refused exactly the bad creators, each sent on a stream of its own
// (the orderer ends a stream after a refusal).
func TestTransferMutationsAreExactlyTheValidatorsInvalid(t *testing.T) {
	nw, db, en := endorsingPeer(t)
	bundle, client := nw.Bundle, nw.Client
	chain := newFakeChain(db)
	ord := &sigFilterOrderer{writers: bundle.Writers}
	peerConn := serve(t, func(s *grpc.Server) { pb.RegisterEndorserServer(s, en) })
	chainConn := serve(t, func(s *grpc.Server) { ab.RegisterAtomicBroadcastServer(s, chain) })
	ordConn := serve(t, func(s *grpc.Server) { ab.RegisterAtomicBroadcastServer(s, ord) })
	e := &endorsers{clients: []pb.EndorserClient{pb.NewEndorserClient(peerConn)}, perTx: 1, channel: "ch", cc: moneytransfer.Name, signer: client}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	const n = 60
	cfg := defaults()
	cfg.MSPDir, cfg.MSPID, cfg.GenesisBlock, cfg.Endorsers, cfg.Orderers = "-", "Org1MSP", "-", []string{"-"}, []string{"-"}
	cfg.Accounts, cfg.Streams, cfg.Phase = 2*n, 4, "setup"
	cfg.Setup.Policy.AnyMemberOf = []string{"Org1MSP"}
	cfg.Setup.WaitTimeout = 20 * time.Second
	cfg.Transfer.Transactions, cfg.Transfer.PayloadBytes = n, 10
	cfg.Transfer.CorruptCreator, cfg.Transfer.ForgeEndorsement = Count(2), Count(3)
	cfg.Transfer.StaleRead, _ = ParseShare("0.05") // 3 of 60
	cfg.MutationsOut = filepath.Join(t.TempDir(), "mutations.csv")
	if err := cfg.check(); err != nil {
		t.Fatal(err)
	}
	if _, _, err := setup(ctx, &cfg, e, ordering{conns: []*grpc.ClientConn{chainConn}}, chain); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(cfg.MutationsOut); err == nil {
		t.Fatal("the setup phase wrote mutations.csv")
	}
	cfg.Phase = "transfer"
	recs, sum, err := transfer(ctx, &cfg, e, ordering{conns: []*grpc.ClientConn{ordConn}})
	if err != nil || sum.Sent != n {
		t.Fatalf("transfer: %+v %v", sum, err)
	}

	// mutations.csv: the header, then each mutated transfer in order with block and index unknown.
	raw, err := os.ReadFile(cfg.MutationsOut)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(raw)), "\n")
	if lines[0] != "block_number,tx_index,tx_id,mutation" || len(lines) != 1+8 {
		t.Fatalf("mutations.csv:\n%s", raw)
	}
	planned := map[string]string{}
	for _, l := range lines[1:] {
		f := strings.Split(l, ",")
		if len(f) != 4 || f[0] != "-1" || f[1] != "-1" {
			t.Fatalf("row %q", l)
		}
		planned[f[2]] = f[3]
	}
	// The orderer refused exactly the bad creators (FORBIDDEN), accepted every other transfer.
	for _, r := range recs {
		want := "SUCCESS"
		if planned[r.TxID] == BadCreator {
			want = "FORBIDDEN"
		}
		if r.Status != want {
			t.Errorf("tx %s (%q): orderer answered %s, want %s", r.TxID, planned[r.TxID], r.Status, want)
		}
	}
	if sum.Acked != n-2 || sum.Failed != 2 {
		t.Errorf("summary %+v", sum)
	}

	// Every envelope through the committer's validator and MVCC, as if the orderer had let all through,
	// in arrival order, in blocks of 7 (a stale read and its writer in one block or in two).
	val := validation.NewTxValidator(validation.Config{ChannelID: "ch", MSPs: bundle.MSPs, ApplicationMSPs: bundle.ApplicationMSPs,
		State: db, Logf: func(string, ...any) {}})
	mvcc := &validation.MVCC{DB: db}
	want := map[string]pb.TxValidationCode{BadCreator: pb.TxValidationCode_BAD_CREATOR_SIGNATURE,
		BadEndorsement: pb.TxValidationCode_ENDORSEMENT_POLICY_FAILURE, StaleRead: pb.TxValidationCode_MVCC_READ_CONFLICT, "": pb.TxValidationCode_VALID}
	counts := map[pb.TxValidationCode]int{}
	number := uint64(len(chain.blocks))
	for lo := 0; lo < len(ord.envs); lo += 7 {
		blk := protoutil.NewBlock(number, nil)
		for _, env := range ord.envs[lo:min(lo+7, len(ord.envs))] {
			blk.Data.Data = append(blk.Data.Data, protoutil.MarshalOrPanic(env))
		}
		filter, err := val.Validate(blk)
		if err != nil {
			t.Fatal(err)
		}
		batch, err := mvcc.ValidateAndPrepare(blk, filter)
		if err != nil {
			t.Fatal(err)
		}
		db.ApplyUpdates(batch, statedb.Height{BlockNum: number})
		for i, env := range ord.envs[lo:min(lo+7, len(ord.envs))] {
			_, chdr, _, _ := protoutil.UnmarshalPayload(env)
			counts[filter.Code(i)]++
			if got := filter.Code(i); got != want[planned[chdr.TxId]] {
				t.Errorf("block %d tx %d (%q): %s, want %s", number, i, planned[chdr.TxId], got, want[planned[chdr.TxId]])
			}
		}
		number++
	}
	if counts[pb.TxValidationCode_BAD_CREATOR_SIGNATURE] != 2 || counts[pb.TxValidationCode_ENDORSEMENT_POLICY_FAILURE] != 3 ||
		counts[pb.TxValidationCode_MVCC_READ_CONFLICT] != 3 || counts[pb.TxValidationCode_VALID] != n-8 {
		t.Fatalf("codes %v", counts)
	}
}
