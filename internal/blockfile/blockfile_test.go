package blockfile

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"

	cb "fabricrepro/internal/protos/common"
	"fabricrepro/internal/protoutil"
)

// fabricRecord encodes a block the way Fabric 1.2's fsblkstorage appends it
// (block_serialization.go serializeBlock, then the varint length in addBlock).
func fabricRecord(b *cb.Block) []byte {
	var body []byte
	body = protowire.AppendVarint(body, b.Header.Number)
	body = protowire.AppendBytes(body, b.Header.DataHash)
	body = protowire.AppendBytes(body, b.Header.PreviousHash)
	body = protowire.AppendVarint(body, uint64(len(b.Data.Data)))
	for _, d := range b.Data.Data {
		body = protowire.AppendBytes(body, d)
	}
	body = protowire.AppendVarint(body, uint64(len(b.Metadata.Metadata)))
	for _, m := range b.Metadata.Metadata {
		body = protowire.AppendBytes(body, m)
	}
	return append(protowire.AppendVarint(nil, uint64(len(body))), body...)
}

func chain(n int) []*cb.Block {
	var out []*cb.Block
	var prev []byte
	for i := 0; i < n; i++ {
		b := protoutil.NewBlock(uint64(i), prev)
		b.Data.Data = [][]byte{[]byte("tx-a"), []byte("tx-b"), []byte("tx-c")}
		b.Header.DataHash = protoutil.BlockDataHash(b.Data)
		b.Metadata.Metadata[cb.BlockMetadataIndex_TRANSACTIONS_FILTER] = []byte{0, 11, 0} // VALID, MVCC_READ_CONFLICT, VALID
		prev = protoutil.BlockHeaderHash(b.Header)
		out = append(out, b)
	}
	return out
}

func file(blocks []*cb.Block) []byte {
	var buf bytes.Buffer
	for _, b := range blocks {
		buf.Write(fabricRecord(b))
	}
	return buf.Bytes()
}

func TestReadAndCheckAFabricChain(t *testing.T) {
	got, err := Read(bytes.NewReader(file(chain(3))))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || got[2].Header.Number != 2 || len(got[1].Data.Data) != 3 || ValidCount(got[0]) != 2 {
		t.Fatalf("decoded %d blocks, last number %d, valid %d", len(got), got[len(got)-1].Header.Number, ValidCount(got[0]))
	}
	if err := Check(got); err != nil {
		t.Fatal(err)
	}
}

func TestACutLastRecordIsAnError(t *testing.T) {
	raw := file(chain(2))
	got, err := Read(bytes.NewReader(raw[:len(raw)-5]))
	if !errors.Is(err, ErrCutRecord) || len(got) != 1 || !strings.Contains(err.Error(), "after 1 complete blocks") {
		t.Fatalf("got %d blocks, err %v; want the one complete block and ErrCutRecord", len(got), err)
	}
	// cut inside the second record's length prefix: a record too long for one varint byte
	big := chain(1)
	big[0].Data.Data = [][]byte{bytes.Repeat([]byte("x"), 300)}
	big[0].Header.DataHash = protoutil.BlockDataHash(big[0].Data)
	raw = append(file(chain(1)), file(big)[:1]...)
	if got, err := Read(bytes.NewReader(raw)); !errors.Is(err, ErrCutRecord) || len(got) != 1 {
		t.Fatalf("got %d blocks, err %v; want ErrCutRecord for a cut length prefix", len(got), err)
	}
	if got, err := Read(bytes.NewReader(file(chain(2)))); err != nil || len(got) != 2 {
		t.Fatalf("a whole file: %d blocks, err %v", len(got), err)
	}
}

func TestBrokenChainAndTamperedDataAreCaught(t *testing.T) {
	blocks := chain(3)
	blocks[2].Header.PreviousHash = []byte("not the hash")
	if err := Check(blocks); err == nil || !strings.Contains(err.Error(), "previous hash") {
		t.Fatalf("err = %v", err)
	}
	blocks = chain(2)
	blocks[1].Data.Data[0] = []byte("tampered")
	if err := Check(blocks); err == nil || !strings.Contains(err.Error(), "data hash") {
		t.Fatalf("err = %v", err)
	}
}

func TestGarbageIsAnError(t *testing.T) {
	raw := append(protowire.AppendVarint(nil, 3), 0xff, 0xff, 0xff)
	if _, err := Read(bytes.NewReader(raw)); err == nil {
		t.Fatal("want an error for a record that is not a block")
	}
}
