package main

import (
	"context"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	"fabricrepro/internal/deliverclient"
	"fabricrepro/internal/ledger/statedb"
	"fabricrepro/internal/ledger/txsim"
	"fabricrepro/internal/msp"
	cb "fabricrepro/internal/protos/common"
	ab "fabricrepro/internal/protos/orderer"
	pb "fabricrepro/internal/protos/peer"
	"fabricrepro/internal/protoutil"
	moneytransfer "fabricrepro/workloads/money-transfer"
)

// fakeChain is a TEST DOUBLE for orderer + committing peer: every envelope
// broadcast to it becomes a one-transaction block whose writes are applied
// to db without validation, and its blocks are served as a deliver Source.
type fakeChain struct {
	ab.UnimplementedAtomicBroadcastServer
	db     *txsim.MemDB
	mu     sync.Mutex
	cond   *sync.Cond
	blocks []*cb.Block
}

func newFakeChain(db *txsim.MemDB) *fakeChain {
	f := &fakeChain{db: db, blocks: []*cb.Block{protoutil.NewBlock(0, nil)}}
	f.cond = sync.NewCond(&f.mu)
	return f
}

func (f *fakeChain) Broadcast(st ab.AtomicBroadcast_BroadcastServer) error {
	return answerBroadcasts(st, func(env *cb.Envelope) (cb.Status, bool) {
		f.commit(env)
		return cb.Status_SUCCESS, false
	})
}

func (f *fakeChain) commit(env *cb.Envelope) {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := uint64(len(f.blocks))
	payload, _, _, _ := protoutil.UnmarshalPayload(env)
	trx, cap, prp, act := &pb.Transaction{}, &pb.ChaincodeActionPayload{}, &pb.ProposalResponsePayload{}, &pb.ChaincodeAction{}
	proto.Unmarshal(payload.Data, trx)
	proto.Unmarshal(trx.Actions[0].Payload, cap)
	proto.Unmarshal(cap.Action.ProposalResponsePayload, prp)
	proto.Unmarshal(prp.Extension, act)
	sets, _, _ := txsim.ParseResults(act.Results)
	batch := &statedb.UpdateBatch{}
	for ns, kv := range sets {
		for _, w := range kv.Writes {
			batch.Put(ns, w.Key, w.Value, statedb.Height{BlockNum: n})
		}
	}
	f.db.ApplyUpdates(batch, statedb.Height{BlockNum: n})
	b := protoutil.NewBlock(n, nil)
	b.Data.Data = [][]byte{protoutil.MarshalOrPanic(env)}
	b.Metadata.Metadata[cb.BlockMetadataIndex_TRANSACTIONS_FILTER] = []byte{0}
	f.blocks = append(f.blocks, b)
	f.cond.Broadcast()
}

func (f *fakeChain) Open(ctx context.Context, start uint64) (deliverclient.Stream, error) {
	f.mu.Lock()
	if start == deliverclient.Newest {
		start = uint64(len(f.blocks) - 1)
	}
	f.mu.Unlock()
	stop := context.AfterFunc(ctx, func() { f.mu.Lock(); f.cond.Broadcast(); f.mu.Unlock() })
	next := start
	return streamFunc(func() (*cb.Block, error) {
		f.mu.Lock()
		defer f.mu.Unlock()
		for uint64(len(f.blocks)) <= next {
			if ctx.Err() != nil {
				stop()
				return nil, ctx.Err()
			}
			f.cond.Wait()
		}
		next++
		return f.blocks[next-1], nil
	}), nil
}

type streamFunc func() (*cb.Block, error)

func (s streamFunc) Recv() (*cb.Block, error) { return s() }

func TestSetupThenTransfer(t *testing.T) {
	nw, db, en := endorsingPeer(t)
	client := nw.Client
	chain := newFakeChain(db)
	peerConn := serve(t, func(s *grpc.Server) { pb.RegisterEndorserServer(s, en) })
	ordConn := serve(t, func(s *grpc.Server) { ab.RegisterAtomicBroadcastServer(s, chain) })

	cfg := defaults()
	cfg.Accounts, cfg.Streams, cfg.Phase = 20, 2, "setup"
	cfg.Setup.Policy.AnyMemberOf = []string{"Org1MSP"}
	cfg.Setup.InitialBalance = 100
	cfg.Setup.WaitTimeout = 10 * time.Second
	e := &endorsers{clients: []pb.EndorserClient{pb.NewEndorserClient(peerConn)}, perTx: 1, channel: "ch", cc: moneytransfer.Name, signer: client}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	recs, sum, err := setup(ctx, &cfg, e, ordering{conns: []*grpc.ClientConn{ordConn}}, chain)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 21 || sum.Acked != 21 || sum.Failed != 0 {
		t.Fatalf("setup: %d records, %+v", len(recs), sum)
	}
	cfg.Transfer.Transactions, cfg.Transfer.Amount, cfg.Transfer.PayloadBytes, cfg.Transfer.Rate = 10, 7, 100, 1000
	recs, sum, err = transfer(ctx, &cfg, e, ordering{conns: []*grpc.ClientConn{ordConn}})
	if err != nil || sum.Acked != 10 || sum.Sent != 10 {
		t.Fatalf("transfer: %+v %v", sum, err)
	}
	for i := 0; i < 20; i++ {
		vv, _ := db.GetState(moneytransfer.Name, moneytransfer.AccountName(i))
		a, _ := moneytransfer.Decode(vv.Value)
		want := int64(93)
		if i%2 == 1 {
			want = 107
		}
		if a.Balance != want {
			t.Fatalf("account %d balance %d, want %d", i, a.Balance, want)
		}
	}
}

// TestExecuteWithFabricChannelBlock runs a transfer phase of no transactions
// against an upstream Fabric network's files: the channel's real block 0
// (ImplicitMeta policies) gives the channel, and nothing else of it is read.
func TestExecuteWithFabricChannelBlock(t *testing.T) {
	dir := t.TempDir()
	if _, err := msp.Generate(dir, msp.NetworkSpec{OrdererOrgs: 1, Orderers: 1, PeerOrgs: 1, Peers: 1, Clients: 1}); err != nil {
		t.Fatal(err)
	}
	cfg := defaults()
	cfg.MSPDir = filepath.Join(dir, "peerOrganizations/org1.example.com/users/client0@org1.example.com/msp")
	cfg.MSPID = "Org1MSP"
	cfg.GenesisBlock = "../../internal/channelconfig/testdata/fabric-1.2-mychannel.block"
	cfg.Endorsers, cfg.Orderers = []string{"127.0.0.1:1"}, []string{"127.0.0.1:1"}
	cfg.Accounts = 2
	if err := cfg.check(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	recs, s, err := execute(ctx, &cfg)
	if err != nil || len(recs) != 0 || s == nil || s.Sent != 0 {
		t.Fatalf("records %d, summary %+v, err %v", len(recs), s, err)
	}
}

// An envelope ordered twice (a Kafka producer's retry) commits once: its first copy's code counts,
// not the DUPLICATE_TXID the peer gives the second.
func TestCommitWaiterKeepsTheFirstCopysCode(t *testing.T) {
	env := func(txID string) []byte {
		chdr, _ := proto.Marshal(&cb.ChannelHeader{TxId: txID})
		payload, _ := proto.Marshal(&cb.Payload{Header: &cb.Header{ChannelHeader: chdr}})
		raw, _ := proto.Marshal(&cb.Envelope{Payload: payload})
		return raw
	}
	block := protoutil.NewBlock(1, nil)
	block.Data.Data = [][]byte{env("a"), env("b"), env("a")}
	block.Metadata.Metadata[cb.BlockMetadataIndex_TRANSACTIONS_FILTER] = []byte{
		byte(pb.TxValidationCode_VALID), byte(pb.TxValidationCode_MVCC_READ_CONFLICT), byte(pb.TxValidationCode_DUPLICATE_TXID)}
	w := &commitWaiter{codes: map[string]pb.TxValidationCode{}}
	w.cond = sync.NewCond(&w.mu)
	w.record(block)
	invalid, example, err := w.wait(context.Background(), []string{"a", "b"})
	if err != nil || invalid != 1 || example != "tx b: MVCC_READ_CONFLICT" {
		t.Fatalf("wait = %d, %q, %v; want only b invalid", invalid, example, err)
	}
}
