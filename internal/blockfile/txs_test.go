package blockfile

import (
	"bytes"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"

	cb "fabricrepro/internal/protos/common"
	pb "fabricrepro/internal/protos/peer"
	"fabricrepro/internal/protoutil"
)

// envelope is a marshaled envelope whose channel header carries txID.
func envelope(typ cb.HeaderType, txID string) []byte {
	chdr := &cb.ChannelHeader{Type: int32(typ), ChannelId: "ch", TxId: txID}
	payload := &cb.Payload{Header: &cb.Header{ChannelHeader: protoutil.MarshalOrPanic(chdr),
		SignatureHeader: protoutil.MarshalOrPanic(&cb.SignatureHeader{})}}
	return protoutil.MarshalOrPanic(&cb.Envelope{Payload: protoutil.MarshalOrPanic(payload)})
}

// txChain is a genesis block (one config tx without a tx ID, no filter)
// followed by one block of four transactions with the given filter.
func txChain(filter []byte) []*cb.Block {
	g := protoutil.NewBlock(0, nil)
	g.Data.Data = [][]byte{envelope(cb.HeaderType_CONFIG, "")}
	g.Header.DataHash = protoutil.BlockDataHash(g.Data)
	b := protoutil.NewBlock(1, protoutil.BlockHeaderHash(g.Header))
	b.Data.Data = [][]byte{envelope(cb.HeaderType_ENDORSER_TRANSACTION, "t0"), envelope(cb.HeaderType_ENDORSER_TRANSACTION, "t1"),
		envelope(cb.HeaderType_ENDORSER_TRANSACTION, "t2"), []byte("not an envelope")}
	b.Header.DataHash = protoutil.BlockDataHash(b.Data)
	b.Metadata.Metadata[cb.BlockMetadataIndex_TRANSACTIONS_FILTER] = filter
	return []*cb.Block{g, b}
}

func TestTxsGiveEachTransactionItsCodeAndID(t *testing.T) {
	filter := []byte{byte(pb.TxValidationCode_VALID), byte(pb.TxValidationCode_BAD_CREATOR_SIGNATURE),
		byte(pb.TxValidationCode_ENDORSEMENT_POLICY_FAILURE), byte(pb.TxValidationCode_MVCC_READ_CONFLICT)}
	blocks, err := Read(bytes.NewReader(file(txChain(filter))))
	if err != nil || Check(blocks) != nil {
		t.Fatalf("read: %v, check: %v", err, Check(blocks))
	}
	type row struct{ id, code string }
	var got []row
	for _, b := range blocks {
		for _, tx := range Txs(b) {
			got = append(got, row{tx.TxID, tx.CodeName()})
		}
	}
	want := []row{{"", "NOT_VALIDATED"}, // genesis: no filter, config tx without an ID
		{"t0", "VALID"}, {"t1", "BAD_CREATOR_SIGNATURE"}, {"t2", "ENDORSEMENT_POLICY_FAILURE"}, {"", "MVCC_READ_CONFLICT"}}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("tx %d: got %v, want %v", i, got[i], want[i])
		}
	}
	if ValidCount(blocks[1]) != 1 || ValidCount(blocks[0]) != 0 {
		t.Errorf("valid counts %d, %d; want 0, 1", ValidCount(blocks[0]), ValidCount(blocks[1]))
	}
}

func TestShortFilterLeavesTheRestNotValidated(t *testing.T) {
	txs := Txs(txChain([]byte{0, 0})[1])
	if txs[1].CodeName() != "VALID" || txs[2].CodeName() != "NOT_VALIDATED" || txs[3].CodeName() != "NOT_VALIDATED" {
		t.Fatalf("got %v", txs)
	}
	if (Tx{Code: 200}).CodeName() != "200" {
		t.Fatal("an unknown code should print as its number")
	}
}

// TestReadsTheReferenceStoreFormat: internal/ledger/blkstorage frames a
// marshaled common.Block, not Fabric's record encoding.
func TestReadsTheReferenceStoreFormat(t *testing.T) {
	var buf bytes.Buffer
	for _, b := range txChain([]byte{0, 11, 0, 10}) {
		raw := protoutil.MarshalOrPanic(b)
		buf.Write(protowire.AppendVarint(nil, uint64(len(raw))))
		buf.Write(raw)
	}
	blocks, err := Read(bytes.NewReader(buf.Bytes()))
	if err != nil || len(blocks) != 2 {
		t.Fatalf("got %d blocks, err %v", len(blocks), err)
	}
	if err := Check(blocks); err != nil {
		t.Fatal(err)
	}
	if txs := Txs(blocks[1]); txs[0].TxID != "t0" || txs[1].CodeName() != "MVCC_READ_CONFLICT" || ValidCount(blocks[1]) != 2 {
		t.Fatalf("txs %v", txs)
	}
}
