package main

import (
	"context"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/proto"

	"fabricrepro/internal/config"
	"fabricrepro/internal/grpcdial"
	"fabricrepro/internal/ledger/statedb"
	"fabricrepro/internal/lscc"
	"fabricrepro/internal/policy"
	cb "fabricrepro/internal/protos/common"
	ab "fabricrepro/internal/protos/orderer"
	pb "fabricrepro/internal/protos/peer"
	"fabricrepro/internal/protoutil"
	"fabricrepro/internal/validation"
	moneytransfer "fabricrepro/workloads/money-transfer"
)

func TestScheduleAndLag(t *testing.T) {
	s := Schedule(4, 1000, 1_000_000_000)
	want := []int64{1_000_000_000, 1_001_000_000, 1_002_000_000, 1_003_000_000}
	for i := range want {
		if s[i] != want[i] {
			t.Fatalf("schedule %v, want %v", s, want)
		}
	}
	if s := Schedule(3, 3, 0); s[1] != 333_333_333 || s[2] != 666_666_667 {
		t.Fatalf("fractional schedule %v", s)
	}
	var recs []Record
	for i := 0; i < 100; i++ {
		recs = append(recs, Record{Scheduled: 1000, Submitted: 1000 + int64(i), Acked: 5000, Status: "SUCCESS"})
	}
	recs = append(recs, Record{Scheduled: 1000, Status: "ERROR:not sent"}) // never submitted: no lag
	maxLag, p99 := LagStats(recs)
	if maxLag != 99 || p99 != 98 {
		t.Fatalf("max %d p99 %d", maxLag, p99)
	}
	sum := Summarize(recs, 50)
	if sum.Sent != 100 || sum.Acked != 100 || sum.Failed != 1 || sum.MaxLagNs != 99 || sum.Duration != 4000 || sum.TargetTPS != 50 {
		t.Fatalf("summary %+v", sum)
	}
	if s := Summarize(recs, 0); s.MaxLagNs != 0 || s.P99LagNs != 0 {
		t.Fatalf("closed loop must not report lag: %+v", s)
	}
}

func TestPlanTransfers(t *testing.T) {
	plan, err := PlanTransfers(50, 100, 0, 1)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int]bool{}
	for _, p := range plan {
		if seen[p.From] || seen[p.To] || p.From == p.To {
			t.Fatalf("accounts reused without conflicts: %v", plan)
		}
		seen[p.From], seen[p.To] = true, true
	}
	if _, err := PlanTransfers(51, 100, 0, 1); err == nil {
		t.Fatal("too few accounts accepted")
	}
	plan, err = PlanTransfers(1000, 2000, 0.2, 7)
	if err != nil {
		t.Fatal(err)
	}
	conflicts := 0
	used := map[int]bool{}
	for _, p := range plan {
		if used[p.From] {
			conflicts++
		}
		if used[p.To] || p.From == p.To {
			t.Fatalf("destination must be fresh: %+v", p)
		}
		used[p.From], used[p.To] = true, true
	}
	if conflicts < 150 || conflicts > 250 {
		t.Fatalf("%d conflicts for rate 0.2 of 1000", conflicts)
	}
	again, _ := PlanTransfers(1000, 2000, 0.2, 7)
	for i := range plan {
		if plan[i] != again[i] {
			t.Fatal("plan is not reproducible from its seed")
		}
	}
}

func TestConfigStrictAndChecked(t *testing.T) {
	cfg := defaults()
	err := config.Parse("lg.yaml", []byte("transfer:\n  payloadbytes: 3\n"), &cfg)
	if err == nil || !strings.Contains(err.Error(), "transfer.payloadbytes") {
		t.Fatalf("unknown key: %v", err)
	}
	cfg = defaults()
	err = config.Parse("lg.yaml", []byte("transfer:\n  rate: fast\n"), &cfg)
	if err == nil || !strings.Contains(err.Error(), "transfer.rate") {
		t.Fatalf("wrong type: %v", err)
	}
	cfg = defaults()
	base := "mspDir: d\nmspID: Org1MSP\ngenesisBlock: g\nendorsers: [a]\norderers: [o]\naccounts: 10\n"
	if err := config.Parse("lg.yaml", []byte(base), &cfg); err != nil || cfg.check() != nil {
		t.Fatalf("minimal config: %v %v", err, cfg.check())
	}
	cfg.Phase = "setup"
	if cfg.check() == nil {
		t.Fatal("setup without an endorsement policy accepted")
	}
	cfg.Setup.Policy.AnyMemberOf = []string{"Org1MSP"}
	if err := cfg.check(); err != nil {
		t.Fatal(err)
	}
	cfg.Transfer.ConflictRate = 2
	if cfg.check() == nil {
		t.Fatal("conflictRate 2 accepted")
	}
}

// fakeOrderer is a TEST DOUBLE for the orderer's AtomicBroadcast service: it
// answers SUCCESS to every envelope (BAD_REQUEST to empty ones) and records
// what it received.
type fakeOrderer struct {
	ab.UnimplementedAtomicBroadcastServer
	mu   sync.Mutex
	envs []*cb.Envelope
	// refuse answers SERVICE_UNAVAILABLE to every envelope (a BFT node that fails).
	refuse bool
}

func (f *fakeOrderer) Broadcast(st ab.AtomicBroadcast_BroadcastServer) error {
	return answerBroadcasts(st, func(env *cb.Envelope) (cb.Status, bool) {
		status := cb.Status_SUCCESS
		if len(env.Payload) == 0 {
			status = cb.Status_BAD_REQUEST
		}
		if f.refuse {
			status = cb.Status_SERVICE_UNAVAILABLE
		}
		f.mu.Lock()
		f.envs = append(f.envs, env)
		f.mu.Unlock()
		return status, false
	})
}

func serve(t *testing.T, register func(*grpc.Server)) *grpc.ClientConn {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	register(srv)
	done := make(chan struct{})
	go func() { srv.Serve(lis); close(done) }()
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(); srv.Stop(); <-done })
	return conn
}

func TestBroadcastOpenLoop(t *testing.T) {
	ord := &fakeOrderer{}
	conn := serve(t, func(s *grpc.Server) { ab.RegisterAtomicBroadcastServer(s, ord) })
	var txs []Endorsed
	for i := 0; i < 40; i++ {
		txs = append(txs, Endorsed{TxID: string(rune('a' + i%26)), Envelope: &cb.Envelope{Payload: []byte{byte(i)}}})
	}
	txs[5].Envelope = &cb.Envelope{}
	start := time.Now()
	recs := broadcast(context.Background(), ordering{conns: []*grpc.ClientConn{conn}}, 3, txs, 400)
	if el := time.Since(start); el < 90*time.Millisecond {
		t.Fatalf("40 tx at 400 tx/s took %s: schedule not followed", el)
	}
	for i, r := range recs {
		if r.Submitted < r.Scheduled || r.Acked < r.Submitted || r.Scheduled == 0 {
			t.Fatalf("record %d times out of order: %+v", i, r)
		}
		if i > 0 && r.Scheduled <= recs[i-1].Scheduled {
			t.Fatalf("schedule not increasing at %d", i)
		}
		want := "SUCCESS"
		if i == 5 {
			want = "BAD_REQUEST"
		}
		if r.Status != want {
			t.Fatalf("record %d status %s, want %s", i, r.Status, want)
		}
	}
	if len(ord.envs) != 40 {
		t.Fatalf("orderer got %d envelopes", len(ord.envs))
	}
	s := Summarize(recs, 400)
	if s.Sent != 40 || s.Acked != 39 || s.Failed != 1 || s.MaxLagNs < 0 {
		t.Fatalf("summary %+v", s)
	}
}

// TestBroadcastToAllTakesTheQuorum: to a BFT service of 4 every envelope
// goes to every orderer and is acknowledged when 3 (the quorum) answered
// SUCCESS; with one orderer refusing it still succeeds, with two (the
// negative control) it fails with the refusal.
func TestBroadcastToAllTakesTheQuorum(t *testing.T) {
	if q := bftQuorum(4); q != 3 {
		t.Fatalf("quorum of 4 = %d, want 3", q)
	}
	for refusing, want := range map[int]string{0: "SUCCESS", 1: "SUCCESS", 2: "SERVICE_UNAVAILABLE"} {
		var ords []*fakeOrderer
		var conns []*grpc.ClientConn
		for k := 0; k < 4; k++ {
			o := &fakeOrderer{refuse: k < refusing}
			ords = append(ords, o)
			conns = append(conns, serve(t, func(s *grpc.Server) { ab.RegisterAtomicBroadcastServer(s, o) }))
		}
		var txs []Endorsed
		for i := 0; i < 10; i++ {
			txs = append(txs, Endorsed{TxID: string(rune('a' + i)), Envelope: &cb.Envelope{Payload: []byte{byte(i + 1)}}})
		}
		recs := broadcast(context.Background(), ordering{conns: conns, toAll: true}, 2, txs, 0)
		for i, r := range recs {
			if r.Status != want {
				t.Fatalf("%d refusing: record %d status %s, want %s", refusing, i, r.Status, want)
			}
			if want == "SUCCESS" && r.Acked < r.Submitted {
				t.Fatalf("%d refusing: record %d acked before submitted: %+v", refusing, i, r)
			}
		}
		for k, o := range ords {
			if len(o.envs) != len(txs) {
				t.Fatalf("%d refusing: orderer %d got %d of %d envelopes", refusing, k, len(o.envs), len(txs))
			}
		}
	}
}

func TestBroadcastToDeadOrdererReportsErrors(t *testing.T) {
	lis, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := lis.Addr().String()
	lis.Close()
	conn, err := grpcdial.Dial(addr, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	recs := broadcast(ctx, ordering{conns: []*grpc.ClientConn{conn}}, 2, []Endorsed{{TxID: "x", Envelope: &cb.Envelope{Payload: []byte{1}}}, {TxID: "y", Envelope: &cb.Envelope{Payload: []byte{1}}}}, 0)
	for _, r := range recs {
		if !strings.HasPrefix(r.Status, "ERROR:") || strings.ContainsAny(r.Status, ",\n") {
			t.Fatalf("status %q", r.Status)
		}
	}
}

// TestEndorseAgainstRealEndorser pre-endorses transfers against the
// in-process endorser and checks forged signatures do not verify.
func TestEndorseAgainstRealEndorser(t *testing.T) {
	nw, db, en := endorsingPeer(t)
	bundle, client, peer := nw.Bundle, nw.Client, nw.Peer
	conn := serve(t, func(s *grpc.Server) { pb.RegisterEndorserServer(s, en) })
	e := &endorsers{clients: []pb.EndorserClient{pb.NewEndorserClient(conn)}, perTx: 1, channel: "ch", cc: moneytransfer.Name, signer: client}

	// Before deployment every proposal is refused and the phase stops.
	if _, err := e.endorseAll(context.Background(), 3, 2, func(int) [][]byte { return moneytransfer.CreateArgs("a", 1, nil) }, func(int) string { return "" }); err == nil || !strings.Contains(err.Error(), "instantiated") {
		t.Fatalf("undeployed chaincode: %v", err)
	}
	// Deploy straight into the state (standing in for a committed lscc tx).
	cd := &lscc.ChaincodeData{Name: moneytransfer.Name, Version: "1.0", Escc: "escc", Vscc: "vscc",
		Policy: protoutil.MarshalOrPanic(policy.SignedByAnyMember("Org1MSP"))}
	b := &statedb.UpdateBatch{}
	b.Put(lscc.Namespace, moneytransfer.Name, cd.Marshal(), statedb.Height{BlockNum: 1})
	db.ApplyUpdates(b, statedb.Height{BlockNum: 1})

	txs, err := e.endorseAll(context.Background(), 6, 3, func(i int) [][]byte {
		return moneytransfer.CreateArgs(moneytransfer.AccountName(i), 10, nil)
	}, func(i int) string {
		if i < 2 {
			return BadEndorsement
		}
		return ""
	})
	if err != nil {
		t.Fatal(err)
	}
	for i, tx := range txs {
		payload, chdr, _, err := protoutil.UnmarshalPayload(tx.Envelope)
		if err != nil || chdr.TxId != tx.TxID {
			t.Fatalf("tx %d: %v", i, err)
		}
		if client.Verify(tx.Envelope.Payload, tx.Envelope.Signature) != nil {
			t.Fatalf("tx %d: envelope not signed by the client", i)
		}
		trx := &pb.Transaction{}
		cap := &pb.ChaincodeActionPayload{}
		if proto.Unmarshal(payload.Data, trx) != nil || proto.Unmarshal(trx.Actions[0].Payload, cap) != nil {
			t.Fatalf("tx %d: bad layers", i)
		}
		end := cap.Action.Endorsements[0]
		ok := peer.Verify(append(append([]byte{}, cap.Action.ProposalResponsePayload...), end.Endorser...), end.Signature) == nil
		if ok != (i >= 2) {
			t.Fatalf("tx %d: endorsement verifies=%v, forged=%v", i, ok, i < 2)
		}
	}
	// The committer's validator must give exactly the forged ones
	// ENDORSEMENT_POLICY_FAILURE (what the harness reads from the ledger).
	blk := protoutil.NewBlock(2, nil)
	for _, tx := range txs {
		blk.Data.Data = append(blk.Data.Data, protoutil.MarshalOrPanic(tx.Envelope))
	}
	val := validation.NewTxValidator(validation.Config{ChannelID: "ch", MSPs: bundle.MSPs, ApplicationMSPs: bundle.ApplicationMSPs,
		State: db, Logf: func(string, ...any) {}})
	filter, err := val.Validate(blk)
	if err != nil {
		t.Fatal(err)
	}
	for i := range txs {
		want := pb.TxValidationCode_VALID
		if i < 2 {
			want = pb.TxValidationCode_ENDORSEMENT_POLICY_FAILURE
		}
		if filter.Code(i) != want {
			t.Errorf("tx %d: validator code %s, want %s", i, filter.Code(i), want)
		}
	}
}
