package peer

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"fabricrepro/internal/committer"
	"fabricrepro/internal/committer/txgen"
	"fabricrepro/internal/config"
	cb "fabricrepro/internal/protos/common"
	ab "fabricrepro/internal/protos/orderer"
	pb "fabricrepro/internal/protos/peer"
	"fabricrepro/internal/protoutil"
)

func TestConfigStrict(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "peer.yaml")
	os.WriteFile(p, []byte("peer:\n  mspDir: x\n  validaton:\n    vsccWorkers: 2\n"), 0o644)
	_, err := Load(p)
	var cerr *config.Error
	if !errors.As(err, &cerr) || !strings.Contains(err.Error(), "validaton") {
		t.Fatalf("unknown key: %v", err)
	}
	os.WriteFile(p, []byte("peer:\n  mspDir: x\n  validation:\n    vsccWorkers: many\n"), 0o644)
	if _, err := Load(p); err == nil || !strings.Contains(err.Error(), "vsccWorkers") {
		t.Fatalf("wrong type: %v", err)
	}
	os.WriteFile(p, []byte("peer:\n  mspDir: x\n  validation:\n    vsccWorkers: 3\n"), 0o644)
	c, err := Load(p)
	if err != nil || c.Peer.Validation.VSCCWorkers != 3 || c.Peer.ListenAddress != Defaults().Peer.ListenAddress {
		t.Fatalf("%+v %v", c, err)
	}
}

func TestDeliverService(t *testing.T) {
	dir := t.TempDir()
	n, err := txgen.NewNetwork(filepath.Join(dir, "crypto"), "mychannel", 1)
	if err != nil {
		t.Fatal(err)
	}
	l, err := committer.OpenLedger(filepath.Join(dir, "ledger"), committer.Config{}, n.Bundle, n.Genesis, committer.LedgerOptions{NoSync: true, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	// Block 1: one malformed transaction (stored as invalid).
	b1, _ := n.Block(1, l.Store.LastBlockHash(), [][]byte{[]byte("junk")})
	if _, err := l.Committer.Commit(b1); err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	done := make(chan struct{})
	pb.RegisterDeliverServer(srv, &DeliverService{ChannelID: "mychannel", Store: l.Store, Readers: n.Bundle.Readers, Done: done})
	lis, _ := net.Listen("tcp", "127.0.0.1:0")
	go srv.Serve(lis)
	defer srv.Stop()
	conn, _ := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	defer conn.Close()
	client := pb.NewDeliverClient(conn)

	seek := func(channel string, start, stop uint64, beh ab.SeekInfo_SeekBehavior) *cb.Envelope {
		env, _ := protoutil.SignedEnvelope(cb.HeaderType_DELIVER_SEEK_INFO, channel, n.Client, &ab.SeekInfo{
			Start:    &ab.SeekPosition{Type: &ab.SeekPosition_Specified{Specified: &ab.SeekSpecified{Number: start}}},
			Stop:     &ab.SeekPosition{Type: &ab.SeekPosition_Specified{Specified: &ab.SeekSpecified{Number: stop}}},
			Behavior: beh})
		return env
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	full, _ := client.Deliver(ctx)
	full.Send(seek("mychannel", 0, 1, ab.SeekInfo_BLOCK_UNTIL_READY))
	for want := uint64(0); want < 2; want++ {
		r, err := full.Recv()
		if err != nil || r.GetBlock().GetHeader().GetNumber() != want {
			t.Fatalf("block %d: %v %v", want, r, err)
		}
		if want == 1 && r.GetBlock().Metadata.Metadata[cb.BlockMetadataIndex_TRANSACTIONS_FILTER][0] != byte(pb.TxValidationCode_INVALID_OTHER_REASON) {
			t.Fatal("block 1 without its validation flags")
		}
	}
	if r, _ := full.Recv(); r.GetStatus() != cb.Status_SUCCESS {
		t.Fatalf("status %v", r)
	}
	// Not ready yet / wrong channel.
	full.Send(seek("mychannel", 5, 5, ab.SeekInfo_FAIL_IF_NOT_READY))
	if r, _ := full.Recv(); r.GetStatus() != cb.Status_NOT_FOUND {
		t.Fatalf("fail-if-not-ready: %v", r)
	}
	full.Send(seek("otherchannel", 0, 0, ab.SeekInfo_BLOCK_UNTIL_READY))
	if r, _ := full.Recv(); r.GetStatus() != cb.Status_NOT_FOUND {
		t.Fatalf("other channel: %v", r)
	}
	// Filtered: blocks until block 2 is committed.
	filt, _ := client.DeliverFiltered(ctx)
	filt.Send(seek("mychannel", 2, 2, ab.SeekInfo_BLOCK_UNTIL_READY))
	got := make(chan *pb.DeliverResponse, 1)
	go func() { r, _ := filt.Recv(); got <- r }()
	b2, _ := n.Block(2, protoutil.BlockHeaderHash(b1.Header), [][]byte{[]byte("junk2")})
	if _, err := l.Committer.Commit(b2); err != nil {
		t.Fatal(err)
	}
	r := <-got
	fb := r.GetFilteredBlock()
	if fb == nil || fb.Number != 2 || len(fb.FilteredTransactions) != 1 || fb.FilteredTransactions[0].TxValidationCode != pb.TxValidationCode_INVALID_OTHER_REASON {
		t.Fatalf("filtered block: %v", r)
	}
	close(done)
}
