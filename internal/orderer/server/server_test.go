package server

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"fabricrepro/internal/channelconfig"
	"fabricrepro/internal/msp"
	"fabricrepro/internal/policy"
	cb "fabricrepro/internal/protos/common"
	ab "fabricrepro/internal/protos/orderer"
	"fabricrepro/internal/protoutil"
)

func testBatch() channelconfig.Batch {
	b := channelconfig.DefaultBatch
	b.MaxMessageCount = 10
	b.AbsoluteMaxBytes = 1 << 20
	b.PreferredMaxBytes = 512 << 10
	b.Timeout = 200 * time.Millisecond
	return b
}

// broadcastOne sends env on a fresh stream and returns the status.
func broadcastOne(t *testing.T, c ab.AtomicBroadcastClient, env *cb.Envelope) cb.Status {
	t.Helper()
	s, err := c.Broadcast(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer s.CloseSend()
	if err := s.Send(env); err != nil {
		t.Fatal(err)
	}
	r, err := s.Recv()
	if err != nil {
		t.Fatal(err)
	}
	return r.Status
}

// checkChain verifies numbering, hash chaining, data hashes and the orderer's
// signatures (SIGNATURES against BlockValidation, and the signed LAST_CONFIG).
func checkChain(t *testing.T, blocks []*cb.Block, bv *policy.Policy) {
	t.Helper()
	for i, b := range blocks {
		if b.Header.Number != uint64(i) {
			t.Fatalf("block %d has number %d", i, b.Header.Number)
		}
		if !bytes.Equal(b.Header.DataHash, protoutil.BlockDataHash(b.Data)) {
			t.Fatalf("block %d: data hash mismatch", i)
		}
		if i == 0 {
			continue // the genesis block is not signed, as in Fabric
		}
		if !bytes.Equal(b.Header.PreviousHash, protoutil.BlockHeaderHash(blocks[i-1].Header)) {
			t.Fatalf("block %d: previous hash mismatch", i)
		}
		triples, err := protoutil.BlockSignatures(b)
		if err != nil {
			t.Fatal(err)
		}
		var sd []policy.SignedData
		for _, tr := range triples {
			sd = append(sd, policy.SignedData{Identity: tr[0], Data: tr[1], Signature: tr[2]})
		}
		if err := bv.Evaluate(sd); err != nil {
			t.Fatalf("block %d: signatures do not satisfy BlockValidation: %v", i, err)
		}
		lc := &cb.Metadata{}
		if err := proto.Unmarshal(b.Metadata.Metadata[cb.BlockMetadataIndex_LAST_CONFIG], lc); err != nil || len(lc.Signatures) != 1 {
			t.Fatalf("block %d: LAST_CONFIG metadata %v", i, err)
		}
		last := &cb.LastConfig{}
		proto.Unmarshal(lc.Value, last)
		s := lc.Signatures[0]
		shdr := &cb.SignatureHeader{}
		proto.Unmarshal(s.SignatureHeader, shdr)
		msg := append(append(append([]byte{}, lc.Value...), s.SignatureHeader...), protoutil.BlockHeaderBytes(b.Header)...)
		if last.Index != 0 || bv.Evaluate([]policy.SignedData{{Identity: shdr.Creator, Data: msg, Signature: s.Signature}}) != nil {
			t.Fatalf("block %d: LAST_CONFIG index %d or its signature is wrong", i, last.Index)
		}
	}
}

// TestBroadcastDeliverEndToEnd orders envelopes over one stream, delivers
// from the oldest block, and checks the chain and that every envelope is
// there once, in the order sent. It runs on both ledgers.
func TestBroadcastDeliverEndToEnd(t *testing.T) {
	for _, kind := range []string{"ram", "file"} {
		t.Run(kind, func(t *testing.T) {
			n := newNetwork(t, testBatch())
			o := start(t, n.config(kind, t.TempDir()))
			c := dial(t, o.Addr())

			const N = 255 // 25 full blocks and 5 envelopes cut by the batch timeout
			s, err := c.Broadcast(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			var sent []string
			for i := 0; i < N; i++ {
				env := txEnvelope(t, testChannel, n.client, 100)
				sent = append(sent, txID(t, env))
				if err := s.Send(env); err != nil {
					t.Fatal(err)
				}
				r, err := s.Recv()
				if err != nil || r.Status != cb.Status_SUCCESS {
					t.Fatalf("envelope %d: %v %v", i, r, err)
				}
			}
			s.CloseSend()

			blocks, st := deliverSeek(t, c, seekEnvelope(t, testChannel, n.client, oldest, specified(26), ab.SeekInfo_BLOCK_UNTIL_READY), 10*time.Second)
			if st != cb.Status_SUCCESS || len(blocks) != 27 {
				t.Fatalf("delivered %d blocks, status %v", len(blocks), st)
			}
			checkChain(t, blocks, o.Registrar.GetChain(testChannel).Bundle().BlockValidation)
			var got []string
			for _, b := range blocks[1:] {
				for _, e := range envelopes(t, b) {
					got = append(got, txID(t, e))
				}
			}
			if len(got) != N {
				t.Fatalf("%d envelopes in blocks, sent %d", len(got), N)
			}
			for i := range sent {
				if got[i] != sent[i] {
					t.Fatalf("envelope %d out of order or duplicated", i)
				}
			}
			if len(blocks[26].Data.Data) != 5 {
				t.Fatalf("last block holds %d envelopes, want the 5 cut by the timeout", len(blocks[26].Data.Data))
			}

			// Metrics are served and count what happened.
			resp, err := http.Get("http://" + o.MetricsAddr() + "/metrics")
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			for _, want := range []string{
				`orderer_broadcast_requests_total{channel="mychannel",status="SUCCESS",type="ENDORSER_TRANSACTION"} 255`,
				`orderer_envelopes_ordered_total{channel="mychannel"} 255`,
				`orderer_ledger_height{channel="mychannel"} 27`,
				`orderer_blocks_cut_total{channel="mychannel",reason="timeout"} 1`,
				`orderer_blocks_cut_total{channel="mychannel",reason="count"} 25`,
			} {
				if !strings.Contains(string(body), want) {
					t.Errorf("metrics lack %s", want)
				}
			}
		})
	}
}

// TestBroadcastRejections checks each status a bad message gets, that the
// stream ends after it (as in every Fabric release) and that the orderer
// keeps serving.
func TestBroadcastRejections(t *testing.T) {
	n := newNetwork(t, testBatch())
	o := start(t, n.config("ram", ""))
	c := dial(t, o.Addr())

	other := t.TempDir()
	if _, err := msp.Generate(other, msp.NetworkSpec{OrdererOrgs: 1, Orderers: 1, PeerOrgs: 1, Peers: 1, Clients: 1}); err != nil {
		t.Fatal(err)
	}
	foreign, err := msp.LoadSigningIdentity(clientMSP(other), "Org1MSP")
	if err != nil {
		t.Fatal(err)
	}
	tampered := txEnvelope(t, testChannel, n.client, 10)
	tampered.Signature[len(tampered.Signature)-1] ^= 1
	configEnv, _ := protoutil.SignedEnvelope(cb.HeaderType_CONFIG, testChannel, n.client, &cb.ConfigEnvelope{})
	noHeader := &cb.Envelope{Payload: protoutil.MarshalOrPanic(&cb.Payload{Data: []byte("x")}), Signature: []byte("s")}

	cases := []struct {
		name string
		env  *cb.Envelope
		want cb.Status
	}{
		{"garbage payload", &cb.Envelope{Payload: []byte{0xff, 0xff, 0xff}}, cb.Status_BAD_REQUEST},
		{"empty envelope", &cb.Envelope{}, cb.Status_BAD_REQUEST},
		{"payload without header", noHeader, cb.Status_BAD_REQUEST},
		{"bad channel header", &cb.Envelope{Payload: protoutil.MarshalOrPanic(&cb.Payload{Header: &cb.Header{ChannelHeader: []byte{0xff}}})}, cb.Status_BAD_REQUEST},
		{"unknown channel", txEnvelope(t, "nochannel", n.client, 10), cb.Status_NOT_FOUND},
		{"identity of another CA", txEnvelope(t, testChannel, foreign, 10), cb.Status_FORBIDDEN},
		{"tampered signature", tampered, cb.Status_FORBIDDEN},
		{"unsigned", txEnvelope(t, testChannel, nil, 10), cb.Status_FORBIDDEN},
		{"larger than AbsoluteMaxBytes", txEnvelope(t, testChannel, n.client, 1<<20), cb.Status_BAD_REQUEST},
		{"config envelope", configEnv, cb.Status_BAD_REQUEST},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, err := c.Broadcast(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Send(tc.env); err != nil {
				t.Fatal(err)
			}
			r, err := s.Recv()
			if err != nil {
				t.Fatal(err)
			}
			if r.Status != tc.want {
				t.Fatalf("status %v (%s), want %v", r.Status, r.Info, tc.want)
			}
			if _, err := s.Recv(); err != io.EOF {
				t.Fatalf("stream should end after a rejection, got %v", err)
			}
			// The orderer keeps serving on the same connection.
			if st := broadcastOne(t, c, txEnvelope(t, testChannel, n.client, 10)); st != cb.Status_SUCCESS {
				t.Fatalf("next stream: %v", st)
			}
		})
	}
}

func TestDeliverSeekSemantics(t *testing.T) {
	n := newNetwork(t, testBatch())
	o := start(t, n.config("ram", ""))
	c := dial(t, o.Addr())
	for i := 0; i < 20; i++ { // two full blocks: height 3
		if st := broadcastOne(t, c, txEnvelope(t, testChannel, n.client, 10)); st != cb.Status_SUCCESS {
			t.Fatal(st)
		}
	}
	seek := func(signer protoutil.Signer, start, stop *ab.SeekPosition, b ab.SeekInfo_SeekBehavior) ([]*cb.Block, cb.Status) {
		return deliverSeek(t, c, seekEnvelope(t, testChannel, signer, start, stop, b), 5*time.Second)
	}
	// Wait until both blocks are written (commit is asynchronous). Seek one
	// block at a time: a start beyond the current height is NOT_FOUND even
	// with BLOCK_UNTIL_READY, while a start at the height waits.
	for _, num := range []uint64{1, 2} {
		if bl, st := seek(n.client, specified(num), specified(num), ab.SeekInfo_BLOCK_UNTIL_READY); st != cb.Status_SUCCESS || len(bl) != 1 {
			t.Fatalf("block %d: %d %v", num, len(bl), st)
		}
	}

	t.Run("newest to newest is one block", func(t *testing.T) {
		bl, st := seek(n.client, newest, newest, ab.SeekInfo_BLOCK_UNTIL_READY)
		if st != cb.Status_SUCCESS || len(bl) != 1 || bl[0].Header.Number != 2 {
			t.Fatalf("%d blocks %v", len(bl), st)
		}
	})
	t.Run("oldest to oldest is the genesis block", func(t *testing.T) {
		bl, st := seek(n.client, oldest, oldest, ab.SeekInfo_FAIL_IF_NOT_READY)
		if st != cb.Status_SUCCESS || len(bl) != 1 || bl[0].Header.Number != 0 {
			t.Fatalf("%d blocks %v", len(bl), st)
		}
	})
	t.Run("fail if not ready beyond height", func(t *testing.T) {
		for _, from := range []uint64{3, 7} {
			bl, st := seek(n.client, specified(from), specified(from+1), ab.SeekInfo_FAIL_IF_NOT_READY)
			if st != cb.Status_NOT_FOUND || len(bl) != 0 {
				t.Fatalf("from %d: %d blocks %v", from, len(bl), st)
			}
		}
		// Partly available: the blocks that exist, then NOT_FOUND.
		bl, st := seek(n.client, specified(1), specified(5), ab.SeekInfo_FAIL_IF_NOT_READY)
		if st != cb.Status_NOT_FOUND || len(bl) != 2 {
			t.Fatalf("%d blocks %v", len(bl), st)
		}
	})
	t.Run("stop before start", func(t *testing.T) {
		if _, st := seek(n.client, specified(2), specified(1), ab.SeekInfo_BLOCK_UNTIL_READY); st != cb.Status_BAD_REQUEST {
			t.Fatal(st)
		}
	})
	t.Run("reader of another CA is forbidden", func(t *testing.T) {
		other := t.TempDir()
		msp.Generate(other, msp.NetworkSpec{OrdererOrgs: 1, Orderers: 1, PeerOrgs: 1, Peers: 1, Clients: 1})
		foreign, _ := msp.LoadSigningIdentity(clientMSP(other), "Org1MSP")
		if _, st := seek(foreign, oldest, newest, ab.SeekInfo_BLOCK_UNTIL_READY); st != cb.Status_FORBIDDEN {
			t.Fatal(st)
		}
	})
	t.Run("unknown channel", func(t *testing.T) {
		_, st := deliverSeek(t, c, seekEnvelope(t, "nochannel", n.client, oldest, newest, ab.SeekInfo_BLOCK_UNTIL_READY), 5*time.Second)
		if st != cb.Status_NOT_FOUND {
			t.Fatal(st)
		}
	})
	t.Run("malformed request", func(t *testing.T) {
		_, st := deliverSeek(t, c, &cb.Envelope{Payload: []byte{0xff, 0x01}}, 5*time.Second)
		if st != cb.Status_BAD_REQUEST {
			t.Fatal(st)
		}
	})
	t.Run("block until ready waits for new blocks", func(t *testing.T) {
		done := make(chan []*cb.Block)
		go func() {
			bl, st := deliverSeek(t, c, seekEnvelope(t, testChannel, n.client, specified(3), specified(3), ab.SeekInfo_BLOCK_UNTIL_READY), 5*time.Second)
			if st != cb.Status_SUCCESS {
				bl = nil
			}
			done <- bl
		}()
		time.Sleep(50 * time.Millisecond)
		if st := broadcastOne(t, c, txEnvelope(t, testChannel, n.client, 10)); st != cb.Status_SUCCESS {
			t.Fatal(st)
		}
		// One envelope: cut by the 200 ms batch timeout.
		bl := <-done
		if len(bl) != 1 || bl[0].Header.Number != 3 || len(bl[0].Data.Data) != 1 {
			t.Fatalf("got %v", bl)
		}
	})
	t.Run("client cancel ends the stream", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		s, err := c.Deliver(ctx)
		if err != nil {
			t.Fatal(err)
		}
		s.Send(seekEnvelope(t, testChannel, n.client, specified(4), specified(100), ab.SeekInfo_BLOCK_UNTIL_READY))
		time.Sleep(50 * time.Millisecond)
		cancel()
		deadline := time.Now().Add(2 * time.Second)
		for {
			resp, _ := http.Get("http://" + o.MetricsAddr() + "/metrics")
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if strings.Contains(string(body), "orderer_deliver_streams_open 0") {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("deliver stream still open after the client cancelled")
			}
			time.Sleep(20 * time.Millisecond)
		}
	})
	t.Run("a sequence of requests on one stream", func(t *testing.T) {
		s, err := c.Deliver(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		defer s.CloseSend()
		for i := uint64(0); i < 3; i++ {
			s.Send(seekEnvelope(t, testChannel, n.client, specified(i), specified(i), ab.SeekInfo_BLOCK_UNTIL_READY))
			r, _ := s.Recv()
			if r.GetBlock().GetHeader().GetNumber() != i {
				t.Fatalf("request %d: %v", i, r)
			}
			if r, _ := s.Recv(); r.GetStatus() != cb.Status_SUCCESS {
				t.Fatalf("request %d status %v", i, r)
			}
		}
	})
}

// TestFileLedgerRestart stops an orderer and starts another on the same
// ledger directory: the chain continues where it stopped.
func TestFileLedgerRestart(t *testing.T) {
	n := newNetwork(t, testBatch())
	dir := t.TempDir()
	cfg := n.config("file", dir)

	o, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan struct{})
	go func() { o.Serve(); close(served) }()
	c := dial(t, o.Addr())
	for i := 0; i < 10; i++ {
		broadcastOne(t, c, txEnvelope(t, testChannel, n.client, 10))
	}
	deliverSeek(t, c, seekEnvelope(t, testChannel, n.client, specified(1), specified(1), ab.SeekInfo_BLOCK_UNTIL_READY), 5*time.Second)
	o.Stop()
	<-served

	o2 := start(t, cfg)
	c2 := dial(t, o2.Addr())
	if h := o2.Registrar.GetChain(testChannel).Ledger().Height(); h != 2 {
		t.Fatalf("reopened height %d", h)
	}
	for i := 0; i < 10; i++ {
		broadcastOne(t, c2, txEnvelope(t, testChannel, n.client, 10))
	}
	blocks, st := deliverSeek(t, c2, seekEnvelope(t, testChannel, n.client, oldest, specified(2), ab.SeekInfo_BLOCK_UNTIL_READY), 5*time.Second)
	if st != cb.Status_SUCCESS || len(blocks) != 3 {
		t.Fatalf("%d blocks %v", len(blocks), st)
	}
	checkChain(t, blocks, o2.Registrar.GetChain(testChannel).Bundle().BlockValidation)

	// A ledger from another network is refused.
	other := newNetwork(t, testBatch())
	bad := other.config("file", dir)
	if _, err := New(bad); err == nil || !strings.Contains(err.Error(), "another genesis block") {
		t.Fatalf("foreign ledger accepted: %v", err)
	}
}

func TestConfigFile(t *testing.T) {
	dir := t.TempDir()
	write := func(s string) string {
		p := dir + "/o.yaml"
		if err := writeFile(p, s); err != nil {
			t.Fatal(err)
		}
		return p
	}
	cfg, err := Load(write("orderer:\n  mspDir: /x\n  ledger:\n    type: file\n  deliver:\n    timeWindow: 1m\n"))
	if err != nil || cfg.Ledger.Type != "file" || cfg.Deliver.TimeWindow != time.Minute || cfg.GRPC.MaxRecvMsgSize != 100<<20 {
		t.Fatalf("%+v %v", cfg, err)
	}
	if _, err := Load(write("orderer:\n  mspDir: /x\n  ledger:\n    typ: file\n")); err == nil || !strings.Contains(err.Error(), "orderer.ledger.typ") {
		t.Fatalf("unknown key: %v", err)
	}
	if _, err := Load(write("orderer:\n  mspDir: /x\n  ledger:\n    type: disk\n")); err == nil || !strings.Contains(err.Error(), "orderer.ledger.type") {
		t.Fatalf("bad value: %v", err)
	}
	// The documented example is a valid configuration.
	if _, err := Load("../../../cmd/orderer/orderer.example.yaml"); err != nil {
		t.Fatalf("example config: %v", err)
	}
}
