package blkstorage

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"fabricrepro/internal/protos/common"
	"fabricrepro/internal/protoutil"
)

func mkBlock(t *testing.T, n uint64, prev []byte, txIDs ...string) *common.Block {
	t.Helper()
	b := protoutil.NewBlock(n, prev)
	for _, id := range txIDs {
		chdr := protoutil.MarshalOrPanic(&common.ChannelHeader{Type: int32(common.HeaderType_ENDORSER_TRANSACTION), TxId: id, ChannelId: "ch"})
		pl := protoutil.MarshalOrPanic(&common.Payload{Header: &common.Header{ChannelHeader: chdr, SignatureHeader: protoutil.MarshalOrPanic(&common.SignatureHeader{})}, Data: make([]byte, 100)})
		b.Data.Data = append(b.Data.Data, protoutil.MarshalOrPanic(&common.Envelope{Payload: pl}))
	}
	b.Header.DataHash = protoutil.BlockDataHash(b.Data)
	flags := make([]byte, len(txIDs))
	for i := range flags {
		flags[i] = byte(i % 2 * 11) // alternate VALID and MVCC_READ_CONFLICT
	}
	b.Metadata.Metadata[common.BlockMetadataIndex_TRANSACTIONS_FILTER] = flags
	return b
}

func TestAppendReopenLookup(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, Options{MaxFileSize: 600, Sync: true}) // small files: force segment rollover
	if err != nil {
		t.Fatal(err)
	}
	var prev []byte
	var blocks []*common.Block
	for n := uint64(0); n < 6; n++ {
		b := mkBlock(t, n, prev, "tx"+string(rune('a'+n))+"0", "tx"+string(rune('a'+n))+"1")
		if err := s.AddBlock(b); err != nil {
			t.Fatal(err)
		}
		prev = protoutil.BlockHeaderHash(b.Header)
		blocks = append(blocks, b)
	}
	if err := s.AddBlock(mkBlock(t, 9, prev)); err == nil {
		t.Fatal("out-of-order block accepted")
	}
	if err := s.AddBlock(mkBlock(t, 6, []byte("wrong"))); err == nil {
		t.Fatal("badly chained block accepted")
	}
	s.Close()
	files, _ := filepath.Glob(filepath.Join(dir, "blockfile_*"))
	if len(files) < 2 {
		t.Fatalf("expected several segment files, got %v", files)
	}

	s, err = Open(dir, DefaultOptions)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.Height() != 6 {
		t.Fatalf("height %d after reopen", s.Height())
	}
	for i, want := range blocks {
		got, err := s.BlockByNumber(uint64(i))
		if err != nil || !proto.Equal(got, want) {
			t.Fatalf("block %d: %v", i, err)
		}
	}
	loc, err := s.TxByID("txd1")
	if err != nil || loc.BlockNum != 3 || loc.TxNum != 1 || loc.ValidationCode != 11 {
		t.Fatalf("txd1: %+v %v", loc, err)
	}
	if ok, _ := s.TxIDExists("txa0"); !ok {
		t.Fatal("txa0 not found")
	}
	if ok, _ := s.TxIDExists("nope"); ok {
		t.Fatal("unknown tx found")
	}
	if _, err := s.TxByID("nope"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("unknown tx: %v", err)
	}
	// The chain continues after a restart.
	if err := s.AddBlock(mkBlock(t, 6, protoutil.BlockHeaderHash(blocks[5].Header), "txg0")); err != nil {
		t.Fatal(err)
	}
}

// A crash after the file append but before the index write: the block must
// be re-indexed on open; a torn tail must be dropped.
func TestRecoverIndexFromFiles(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, DefaultOptions)
	if err != nil {
		t.Fatal(err)
	}
	b0 := mkBlock(t, 0, nil, "x0")
	if err := s.AddBlock(b0); err != nil {
		t.Fatal(err)
	}
	s.Close()
	// Append block 1 by hand (as if the index write was lost) and a torn record.
	b1 := mkBlock(t, 1, protoutil.BlockHeaderHash(b0.Header), "x1")
	raw := protoutil.MarshalOrPanic(b1)
	f, _ := os.OpenFile(filepath.Join(dir, "blockfile_000000"), os.O_APPEND|os.O_WRONLY, 0)
	f.Write(append(protowire.AppendVarint(nil, uint64(len(raw))), raw...))
	f.Write([]byte{0x90, 0x03, 1, 2, 3})
	f.Close()
	s, err = Open(dir, DefaultOptions)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.Height() != 2 {
		t.Fatalf("height %d, want 2", s.Height())
	}
	if loc, err := s.TxByID("x1"); err != nil || loc.BlockNum != 1 {
		t.Fatalf("x1: %+v %v", loc, err)
	}
	if err := s.AddBlock(mkBlock(t, 2, protoutil.BlockHeaderHash(b1.Header), "x2")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.BlockByNumber(2); err != nil {
		t.Fatal(err)
	}
}

func TestWaitForHeight(t *testing.T) {
	s, err := Open(t.TempDir(), Options{Sync: false})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	done := make(chan error, 1)
	go func() { done <- s.WaitForHeight(context.Background(), 0) }()
	time.Sleep(20 * time.Millisecond)
	s.AddBlock(mkBlock(t, 0, nil))
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if err := s.WaitForHeight(ctx, 5); err == nil {
		t.Fatal("wait returned before the block existed")
	}
}
