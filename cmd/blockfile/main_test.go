package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"

	cb "fabricrepro/internal/protos/common"
	"fabricrepro/internal/protoutil"
)

func envelope(txID string) []byte {
	chdr := &cb.ChannelHeader{Type: int32(cb.HeaderType_ENDORSER_TRANSACTION), ChannelId: "ch", TxId: txID}
	payload := &cb.Payload{Header: &cb.Header{ChannelHeader: protoutil.MarshalOrPanic(chdr)}}
	return protoutil.MarshalOrPanic(&cb.Envelope{Payload: protoutil.MarshalOrPanic(payload)})
}

// ledgerFile writes a two-block chain in Fabric's record encoding: block 0
// without a filter, block 1 with three transactions.
func ledgerFile(t *testing.T, tamper bool) string {
	g := protoutil.NewBlock(0, nil)
	g.Data.Data = [][]byte{envelope("")}
	g.Header.DataHash = protoutil.BlockDataHash(g.Data)
	b := protoutil.NewBlock(1, protoutil.BlockHeaderHash(g.Header))
	b.Data.Data = [][]byte{envelope("a"), envelope("b"), envelope("c")}
	b.Header.DataHash = protoutil.BlockDataHash(b.Data)
	b.Metadata.Metadata[cb.BlockMetadataIndex_TRANSACTIONS_FILTER] = []byte{0, 4, 11}
	if tamper {
		b.Data.Data[1] = envelope("x")
	}
	var raw []byte
	for _, blk := range []*cb.Block{g, b} {
		var body []byte
		body = protowire.AppendVarint(body, blk.Header.Number)
		body = protowire.AppendBytes(body, blk.Header.DataHash)
		body = protowire.AppendBytes(body, blk.Header.PreviousHash)
		body = protowire.AppendVarint(body, uint64(len(blk.Data.Data)))
		for _, d := range blk.Data.Data {
			body = protowire.AppendBytes(body, d)
		}
		body = protowire.AppendVarint(body, uint64(len(blk.Metadata.Metadata)))
		for _, m := range blk.Metadata.Metadata {
			body = protowire.AppendBytes(body, m)
		}
		raw = append(append(raw, protowire.AppendVarint(nil, uint64(len(body)))...), body...)
	}
	path := filepath.Join(t.TempDir(), "blockfile_000000")
	if err := os.WriteFile(path, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestPerBlockAndPerTransactionCSV(t *testing.T) {
	path := ledgerFile(t, false)
	var out, errb bytes.Buffer
	if rc := run([]string{path}, &out, &errb); rc != 0 {
		t.Fatalf("rc %d: %s", rc, errb.String())
	}
	if want := "block_number,tx_count,valid_count\n0,1,0\n1,3,1\n"; out.String() != want {
		t.Fatalf("per block:\n%s\nwant:\n%s", out.String(), want)
	}
	out.Reset()
	if rc := run([]string{"--txs", path}, &out, &errb); rc != 0 {
		t.Fatalf("rc %d: %s", rc, errb.String())
	}
	want := "block_number,tx_index,tx_id,validation_code\n0,0,,NOT_VALIDATED\n1,0,a,VALID\n1,1,b,BAD_CREATOR_SIGNATURE\n1,2,c,MVCC_READ_CONFLICT\n"
	if out.String() != want {
		t.Fatalf("per tx:\n%s\nwant:\n%s", out.String(), want)
	}
}

func TestExitCodes(t *testing.T) {
	var out, errb bytes.Buffer
	if rc := run([]string{"--txs"}, &out, &errb); rc != 2 {
		t.Errorf("no files: rc %d, want 2", rc)
	}
	if rc := run([]string{"--txs", filepath.Join(t.TempDir(), "missing")}, &out, &errb); rc != 1 {
		t.Errorf("missing file: rc %d, want 1", rc)
	}
	errb.Reset()
	if rc := run([]string{"--txs", ledgerFile(t, true)}, &out, &errb); rc != 1 || !strings.Contains(errb.String(), "data hash") {
		t.Errorf("tampered chain: rc %d, stderr %q", rc, errb.String())
	}
}
