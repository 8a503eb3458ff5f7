package txverify

import (
	"compress/gzip"
	"os"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"fabricrepro/internal/blockfile"
	cb "fabricrepro/internal/protos/common"
	"fabricrepro/internal/protos/ledger/rwset/kvrwset"
	pb "fabricrepro/internal/protos/peer"
	"fabricrepro/internal/protoutil"
)

// The testdata are byte prefixes of the peer's kept ledgers of a table1-today-bft smoke run of Fabric v3.1.5
// (fastfabric paper, control points, 2026-12-07): blocks 0-4 (the genesis config block, the _lifecycle approve
// and commit transactions, 184 money transfers) of the SmartBFT (4 orderers) and the Raft (3) channel, and
// block 44 of the SmartBFT control, which holds two of its planted forged endorsements (tx 1, 46) and a planted
// stale read (tx 89). The peer recorded every transaction of blocks 0-4 VALID.

func readGz(t *testing.T, name string) []*cb.Block {
	t.Helper()
	f, err := os.Open("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	z, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	bs, err := blockfile.Read(z)
	if err != nil {
		t.Fatal(err)
	}
	return bs
}

func mustAgree(t *testing.T, res *Result) {
	t.Helper()
	if res.Disagree != 0 || res.Agree != res.Txs || res.Checked != res.Txs {
		for _, r := range res.Rows {
			if !r.Agrees() {
				t.Errorf("block %d tx %d: recorded %s, derived %s: %s", r.Block, r.Index, CodeName(r.Recorded), CodeName(r.Derived), r.Reason)
				break
			}
		}
		t.Fatalf("txs %d checked %d agree %d disagree %d", res.Txs, res.Checked, res.Agree, res.Disagree)
	}
}

func TestV2RealLedgersAgree(t *testing.T) {
	for name, txs := range map[string]int{"v31-bft-blocks0-4.gz": 187, "v31-raft-blocks0-4.gz": 203} {
		t.Run(name, func(t *testing.T) {
			blocks := readGz(t, name)
			if got := RulesOf(blocks[0]); got != "v2" {
				t.Fatalf("RulesOf = %s, want v2 (the channel has V2_0+ capabilities)", got)
			}
			res, err := Verify(blocks, Options{Workers: 2})
			if err != nil {
				t.Fatal(err)
			}
			if res.Rules != "v2" || res.Txs != txs {
				t.Fatalf("rules %s, %d txs", res.Rules, res.Txs)
			}
			mustAgree(t, res)
			if !strings.Contains(res.Policy, "_lifecycle definitions (money-transfer)") || !strings.Contains(res.Source, "BlockValidation") {
				t.Fatalf("policy %q source %q", res.Policy, res.Source)
			}
			// the Fabric 1.2 model does not model these ledgers (issue 45): forcing it disagrees
			v1, err := Verify(blocks, Options{Workers: 2, Rules: "v1"})
			if err != nil {
				t.Fatal(err)
			}
			if v1.Rules != "v1" || v1.Disagree == 0 {
				t.Fatalf("v1 rules on a v2 ledger: %d disagree", v1.Disagree)
			}
		})
	}
}

// sigs returns block b's SIGNATURES metadata entries (raw MetadataSignature messages) and value.
func sigs(t *testing.T, b *cb.Block) (value []byte, entries [][]byte) {
	t.Helper()
	md := &cb.Metadata{}
	if err := proto.Unmarshal(b.Metadata.Metadata[cb.BlockMetadataIndex_SIGNATURES], md); err != nil {
		t.Fatal(err)
	}
	return md.Value, protoBytesAll(b.Metadata.Metadata[cb.BlockMetadataIndex_SIGNATURES], 2)
}

func setSigs(b *cb.Block, value []byte, entries [][]byte) {
	var raw []byte
	raw = protowire.AppendTag(raw, 1, protowire.BytesType)
	raw = protowire.AppendBytes(raw, value)
	for _, e := range entries {
		raw = protowire.AppendTag(raw, 2, protowire.BytesType)
		raw = protowire.AppendBytes(raw, e)
	}
	b.Metadata.Metadata[cb.BlockMetadataIndex_SIGNATURES] = raw
}

// flipSig flips a byte of a MetadataSignature's signature (field 2).
func flipSig(e []byte) []byte {
	sig := append([]byte(nil), protoBytes(e, 2)...)
	sig[len(sig)/2] ^= 0x5a
	var out []byte
	for _, f := range []protowire.Number{1, 2, 3} {
		v := protoBytes(e, f)
		if f == 2 {
			v = sig
		}
		if v != nil {
			out = protowire.AppendBytes(protowire.AppendTag(out, f, protowire.BytesType), v)
		}
	}
	return out
}

func TestV2BFTBlockSignaturesNeedAQuorum(t *testing.T) {
	blocks := readGz(t, "v31-bft-blocks0-4.gz")
	b := blocks[4]
	value, entries := sigs(t, b)
	if len(entries) < 3 {
		t.Fatalf("block 4 holds %d signatures; SmartBFT with 4 consenters signs with a quorum of 3", len(entries))
	}
	if len(protoBytes(entries[0], 3)) == 0 || len(protoBytes(entries[0], 1)) != 0 {
		t.Fatal("SmartBFT's signatures name their consenter by an IdentifierHeader, with no SignatureHeader")
	}
	// a quorum (3 of 4) verifies
	setSigs(b, value, entries[:3])
	if _, err := Verify(blocks, Options{Workers: 2}); err != nil {
		t.Fatalf("3 of 4 consenters' signatures: %v", err)
	}
	// f+1 = 2 does not
	setSigs(b, value, entries[:2])
	if _, err := Verify(blocks, Options{Workers: 2}); err == nil || !strings.Contains(err.Error(), "block 4") || !strings.Contains(err.Error(), "BlockValidation") {
		t.Fatalf("2 of 4 consenters' signatures: err %v", err)
	}
	// nor 3 with one forged, nor the same consenter's signature three times
	setSigs(b, value, [][]byte{entries[0], entries[1], flipSig(entries[2])})
	if _, err := Verify(blocks, Options{Workers: 2}); err == nil {
		t.Fatal("a forged third signature passed")
	}
	setSigs(b, value, [][]byte{entries[0], entries[0], entries[0]})
	if _, err := Verify(blocks, Options{Workers: 2}); err == nil {
		t.Fatal("one consenter's signature three times passed")
	}
}

func TestV2RaftBlockSignature(t *testing.T) {
	blocks := readGz(t, "v31-raft-blocks0-4.gz")
	b := blocks[3]
	value, entries := sigs(t, b)
	if len(entries) != 1 || len(protoBytes(entries[0], 1)) == 0 {
		t.Fatalf("a Raft block holds one signature with a SignatureHeader (the leader's), got %d", len(entries))
	}
	setSigs(b, value, [][]byte{flipSig(entries[0])})
	if _, err := Verify(blocks, Options{Workers: 2}); err == nil || !strings.Contains(err.Error(), "block 3") {
		t.Fatalf("a forged orderer signature: err %v", err)
	}
	// a block whose data changed no longer matches its header (nor the orderer's signature)
	blocks = readGz(t, "v31-raft-blocks0-4.gz")
	blocks[4].Data.Data[0], blocks[4].Data.Data[1] = blocks[4].Data.Data[1], blocks[4].Data.Data[0]
	if _, err := Verify(blocks, Options{Workers: 2}); err == nil || !strings.Contains(err.Error(), "data hash") {
		t.Fatalf("reordered data: err %v", err)
	}
}

// rebuilt makes block num from envelopes with the recorded codes, its data hash right and no orderer
// signature checked (Options.unsigned).
func rebuilt(num uint64, prev *cb.Block, envs [][]byte, codes []pb.TxValidationCode) *cb.Block {
	b := &cb.Block{Header: &cb.BlockHeader{Number: num, PreviousHash: protoutil.BlockHeaderHash(prev.Header)},
		Data: &cb.BlockData{Data: envs}, Metadata: &cb.BlockMetadata{Metadata: make([][]byte, 5)}}
	b.Header.DataHash = protoutil.BlockDataHash(b.Data)
	filter := make([]byte, len(codes))
	for i, c := range codes {
		filter[i] = byte(c)
	}
	b.Metadata.Metadata[cb.BlockMetadataIndex_TRANSACTIONS_FILTER] = filter
	return b
}

func TestV2FindsThePlantedTransactions(t *testing.T) {
	blocks := readGz(t, "v31-bft-blocks0-4.gz")
	b44 := readGz(t, "v31-bft-block44.gz")[0]
	rec := blockfile.Txs(b44)
	for i, want := range map[int]string{1: "ENDORSEMENT_POLICY_FAILURE", 46: "ENDORSEMENT_POLICY_FAILURE", 89: "MVCC_READ_CONFLICT"} {
		if rec[i].CodeName() != want {
			t.Fatalf("block 44 tx %d recorded %s, want %s", i, rec[i].CodeName(), want)
		}
	}
	// block 44 as it is, after blocks 0-4: its orderer signatures verify; its two forged endorsements are found
	// (its other transfers read versions of blocks 5-43, which these files do not hold: they are not compared)
	res, err := Verify(append(blocks, b44), Options{Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res.Rows {
		if r.Block == 44 && (r.Index == 1 || r.Index == 46) && r.Derived != pb.TxValidationCode_ENDORSEMENT_POLICY_FAILURE {
			t.Fatalf("planted forged endorsement at 44:%d derived %s (%s)", r.Index, CodeName(r.Derived), r.Reason)
		}
	}
	// the two forged endorsements and the stale read in a block of their own after block 4: each is found
	envs := [][]byte{b44.Data.Data[1], b44.Data.Data[46], b44.Data.Data[89]}
	codes := []pb.TxValidationCode{pb.TxValidationCode_ENDORSEMENT_POLICY_FAILURE, pb.TxValidationCode_ENDORSEMENT_POLICY_FAILURE, pb.TxValidationCode_MVCC_READ_CONFLICT}
	b5 := rebuilt(5, blocks[4], envs, codes)
	res, err = Verify(append(blocks, b5), Options{Workers: 2, unsigned: map[uint64]bool{5: true}})
	if err != nil {
		t.Fatal(err)
	}
	mustAgree(t, res)
	// recorded VALID, they disagree: the verifier does not take the recorded code on trust
	b5 = rebuilt(5, blocks[4], envs, []pb.TxValidationCode{0, 0, 0})
	res, err = Verify(append(blocks, b5), Options{Workers: 2, unsigned: map[uint64]bool{5: true}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Disagree != 3 {
		t.Fatalf("3 planted transactions recorded VALID: %d disagree", res.Disagree)
	}
}

func TestV2CreatorDuplicatesAndSampling(t *testing.T) {
	blocks := readGz(t, "v31-raft-blocks0-4.gz")
	b4 := blocks[4]
	n := len(b4.Data.Data)
	envs := append([][]byte(nil), b4.Data.Data...)
	codes := make([]pb.TxValidationCode, n)
	// tx 0: its creator's signature forged
	env := &cb.Envelope{}
	if err := proto.Unmarshal(envs[0], env); err != nil {
		t.Fatal(err)
	}
	env.Signature[len(env.Signature)/2] ^= 0x5a
	envs[0] = protoutil.MarshalOrPanic(env)
	codes[0] = pb.TxValidationCode_BAD_CREATOR_SIGNATURE
	// tx 2 again as tx 3 (a duplicate in the block) and block 3's tx 0 as tx 4 (a duplicate in the ledger)
	envs[3] = envs[2]
	codes[3] = pb.TxValidationCode_DUPLICATE_TXID
	envs[4] = blocks[3].Data.Data[0]
	codes[4] = pb.TxValidationCode_DUPLICATE_TXID
	b := rebuilt(4, blocks[3], envs, codes)
	all := append(blocks[:4:4], b)
	res, err := Verify(all, Options{Workers: 2, unsigned: map[uint64]bool{4: true}})
	if err != nil {
		t.Fatal(err)
	}
	mustAgree(t, res)
	// a sample checks every transaction recorded invalid, and a share of the others
	res, err = Verify(all, Options{Workers: 2, unsigned: map[uint64]bool{4: true}, Sample: 0.1, Seed: 7})
	if err != nil {
		t.Fatal(err)
	}
	mustAgreeSample(t, res, 3)
	// recorded VALID, the forged creator disagrees (a sample finds it only where it is drawn: a signature
	// is not checked outside the sample)
	codes[0] = pb.TxValidationCode_VALID
	b = rebuilt(4, blocks[3], envs, codes)
	res, err = Verify(append(blocks[:4:4], b), Options{Workers: 2, unsigned: map[uint64]bool{4: true}})
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, r := range res.Rows {
		found = found || (r.Block == 4 && r.Index == 0 && r.Derived == pb.TxValidationCode_BAD_CREATOR_SIGNATURE)
	}
	if res.Disagree != 1 || !found {
		t.Fatalf("forged creator recorded VALID: %d disagree, found %v", res.Disagree, found)
	}
}

func mustAgreeSample(t *testing.T, res *Result, invalid int) {
	t.Helper()
	if res.Disagree != 0 || res.Checked >= res.Txs || res.Checked < invalid {
		t.Fatalf("sample: txs %d checked %d disagree %d", res.Txs, res.Checked, res.Disagree)
	}
}

func TestV2MVCC(t *testing.T) {
	v := &v2Verifier{st: v2State{version: map[v2Key]*v2Height{}, lifecycle: map[string][]byte{}, hasVP: map[v2Key]bool{}}}
	read := func(key string, ver *kvrwset.Version) *txRWSet {
		return &txRWSet{ns: []nsRW{{name: "cc", kv: &kvrwset.KVRWSet{Reads: []*kvrwset.KVRead{{Key: key, Version: ver}},
			Writes: []*kvrwset.KVWrite{{Key: key, Value: []byte("1")}}}}}}
	}
	updated := map[v2Key]bool{}
	// a key never written, read as absent: valid; then written at 7:3
	if code, _ := v.mvcc(read("a", nil), updated); code != pb.TxValidationCode_VALID {
		t.Fatal(code)
	}
	v.apply(read("a", nil), v2Height{7, 3}, updated)
	// in the same block: a read of it conflicts whatever its version
	if code, _ := v.mvcc(read("a", &kvrwset.Version{BlockNum: 7, TxNum: 3}), updated); code != pb.TxValidationCode_MVCC_READ_CONFLICT {
		t.Fatal("a read of a key an earlier valid transaction of the block wrote", code)
	}
	// in a later block: the committed version is valid, another (or absent) is stale
	updated = map[v2Key]bool{}
	if code, _ := v.mvcc(read("a", &kvrwset.Version{BlockNum: 7, TxNum: 3}), updated); code != pb.TxValidationCode_VALID {
		t.Fatal(code)
	}
	for _, ver := range []*kvrwset.Version{nil, {BlockNum: 7, TxNum: 2}, {BlockNum: 6, TxNum: 3}} {
		if code, _ := v.mvcc(read("a", ver), updated); code != pb.TxValidationCode_MVCC_READ_CONFLICT {
			t.Fatal("stale read", ver, code)
		}
	}
	// hashed reads of a collection follow the same rules
	hashed := &txRWSet{ns: []nsRW{{name: "cc", kv: &kvrwset.KVRWSet{}, colls: []collRW{{name: "c", h: &kvrwset.HashedRWSet{
		HashedReads: []*kvrwset.KVReadHash{{KeyHash: []byte("h"), Version: nil}}, HashedWrites: []*kvrwset.KVWriteHash{{KeyHash: []byte("h")}}}}}}}}
	if code, _ := v.mvcc(hashed, updated); code != pb.TxValidationCode_VALID {
		t.Fatal(code)
	}
	v.apply(hashed, v2Height{8, 0}, updated)
	if code, _ := v.mvcc(hashed, map[v2Key]bool{}); code != pb.TxValidationCode_MVCC_READ_CONFLICT {
		t.Fatal("a stale hashed read", code)
	}
}
