package server

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/proto"

	"fabricrepro/internal/channelconfig"
	"fabricrepro/internal/committer/txgen"
	"fabricrepro/internal/msp"
	cb "fabricrepro/internal/protos/common"
	ab "fabricrepro/internal/protos/orderer"
	"fabricrepro/internal/protoutil"
)

const testChannel = "mychannel"

// network is generated crypto material plus a genesis block.
type network struct {
	dir     string
	genesis string
	client  *msp.SigningIdentity
	orderer string // orderer MSP dir
	batch   channelconfig.Batch
}

func clientMSP(dir string) string {
	return filepath.Join(dir, "peerOrganizations/org1.example.com/users/client0@org1.example.com/msp")
}

func newNetwork(t testing.TB, batch channelconfig.Batch) *network {
	t.Helper()
	dir := t.TempDir()
	gen, err := txgen.NewNetworkBatch(dir, testChannel, 1, batch)
	if err != nil {
		t.Fatal(err)
	}
	n := &network{dir: dir, genesis: filepath.Join(dir, "genesis.block"), batch: batch, client: gen.Client,
		orderer: filepath.Join(dir, "ordererOrganizations/orderer.example.com/orderers/orderer0.orderer.example.com/msp")}
	if err := gen.WriteGenesis(n.genesis); err != nil {
		t.Fatal(err)
	}
	return n
}

func (n *network) config(ledgerType string, ledgerDir string) Config {
	c := Defaults()
	c.ListenAddress = "127.0.0.1:0"
	c.MetricsAddress = "127.0.0.1:0"
	c.GenesisBlock = n.genesis
	c.MSPDir = n.orderer
	c.MSPID = "OrdererMSP"
	c.Ledger.Type = ledgerType
	c.Ledger.Dir = ledgerDir
	return c
}

// start runs an orderer until the test ends (even if it fails).
func start(t testing.TB, cfg Config) *Orderer {
	t.Helper()
	o, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan struct{})
	go func() { o.Serve(); close(served) }()
	t.Cleanup(func() { o.Stop(); <-served })
	return o
}

func dial(t testing.TB, addr string) ab.AtomicBroadcastClient {
	t.Helper()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(100<<20), grpc.MaxCallSendMsgSize(100<<20)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return ab.NewAtomicBroadcastClient(conn)
}

// txEnvelope is a signed ENDORSER_TRANSACTION of about pad bytes.
func txEnvelope(t testing.TB, channel string, signer protoutil.Signer, pad int) *cb.Envelope {
	t.Helper()
	env, err := protoutil.SignedEnvelope(cb.HeaderType_ENDORSER_TRANSACTION, channel, signer, &cb.Metadata{Value: make([]byte, pad)})
	if err != nil {
		t.Fatal(err)
	}
	return env
}

func txID(t testing.TB, env *cb.Envelope) string {
	t.Helper()
	_, chdr, _, err := protoutil.UnmarshalPayload(env)
	if err != nil {
		t.Fatal(err)
	}
	return chdr.TxId
}

func seekEnvelope(t testing.TB, channel string, signer protoutil.Signer, start, stop *ab.SeekPosition, behavior ab.SeekInfo_SeekBehavior) *cb.Envelope {
	t.Helper()
	env, err := protoutil.SignedEnvelope(cb.HeaderType_DELIVER_SEEK_INFO, channel, signer, &ab.SeekInfo{Start: start, Stop: stop, Behavior: behavior})
	if err != nil {
		t.Fatal(err)
	}
	return env
}

func specified(n uint64) *ab.SeekPosition {
	return &ab.SeekPosition{Type: &ab.SeekPosition_Specified{Specified: &ab.SeekSpecified{Number: n}}}
}

var (
	oldest = &ab.SeekPosition{Type: &ab.SeekPosition_Oldest{Oldest: &ab.SeekOldest{}}}
	newest = &ab.SeekPosition{Type: &ab.SeekPosition_Newest{Newest: &ab.SeekNewest{}}}
)

// deliver sends one seek request and collects blocks until a status arrives.
func deliverSeek(t testing.TB, c ab.AtomicBroadcastClient, seek *cb.Envelope, timeout time.Duration) ([]*cb.Block, cb.Status) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	s, err := c.Deliver(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Send(seek); err != nil {
		t.Fatal(err)
	}
	var blocks []*cb.Block
	for {
		r, err := s.Recv()
		if err != nil {
			t.Fatalf("deliver: %v after %d blocks", err, len(blocks))
		}
		switch x := r.Type.(type) {
		case *ab.DeliverResponse_Block:
			blocks = append(blocks, x.Block)
		case *ab.DeliverResponse_Status:
			return blocks, x.Status
		}
	}
}

// envelopes returns the envelopes of a block.
func envelopes(t testing.TB, b *cb.Block) []*cb.Envelope {
	t.Helper()
	var out []*cb.Envelope
	for _, d := range b.Data.Data {
		e := &cb.Envelope{}
		if err := proto.Unmarshal(d, e); err != nil {
			t.Fatal(err)
		}
		out = append(out, e)
	}
	return out
}

func writeFile(p, s string) error { return os.WriteFile(p, []byte(s), 0o644) }
