package txverify

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"fabricrepro/internal/blockfile"
	"fabricrepro/internal/committer"
	"fabricrepro/internal/committer/txgen"
	"fabricrepro/internal/ledger/statedb"
	"fabricrepro/internal/lscc"
	"fabricrepro/internal/msp"
	"fabricrepro/internal/policy"
	cb "fabricrepro/internal/protos/common"
	"fabricrepro/internal/protos/ledger/rwset/kvrwset"
	pb "fabricrepro/internal/protos/peer"
	"fabricrepro/internal/protoutil"
)

// refLedger is a ledger the reference committer made, with what each of its
// transactions was built to be.
type refLedger struct {
	net    *txgen.Network
	org2   *msp.SigningIdentity
	dir    string // the ledger's data directory
	blocks []*cb.Block
	want   map[[2]uint64]string // (block, index) -> the code it was built to get; others VALID
}

// buildRefLedger commits, through internal/committer (the reference
// committer cmd/committerbench drives), a ledger holding every kind of
// transaction the verifier must tell apart:
//
//   - chaincode "mt" defined outside the ledger (txgen.Deploy at 0:0, policy
//     OR('Org1MSP.member'), as committerbench does) and its accounts pre-loaded
//     at 0:0;
//   - chaincode "cc2" deployed by an lscc transaction of block 1 with
//     AND('Org1MSP.member', 'Org2MSP.member') (so the ledger's policy, not the
//     flag's, must be used);
//   - bad creator signatures, forged endorsements, a cc2 transaction endorsed
//     by Org1 alone, stale reads (of a pre-loaded key too), a read of a key an
//     earlier transaction of the same block wrote, the same transaction twice
//     in a block and again in a later block.
func buildRefLedger(t *testing.T) *refLedger {
	t.Helper()
	dir := t.TempDir()
	n, err := txgen.NewNetwork(filepath.Join(dir, "crypto"), "mychannel", 2)
	if err != nil {
		t.Fatal(err)
	}
	org2, err := msp.LoadSigningIdentity(filepath.Join(dir, "crypto/peerOrganizations/org2.example.com/peers/peer0.org2.example.com/msp"), "Org2MSP")
	if err != nil {
		t.Fatal(err)
	}
	r := &refLedger{net: n, org2: org2, dir: filepath.Join(dir, "ledger"), want: map[[2]uint64]string{}}
	l, err := committer.OpenLedger(r.dir, committer.Config{ChannelID: n.Channel, VSCCWorkers: 2}, n.Bundle, n.Genesis,
		committer.LedgerOptions{Logf: func(string, ...any) {}, NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if err := txgen.Deploy(l.State, "mt", "1.0", policy.SignedByAnyMember("Org1MSP")); err != nil {
		t.Fatal(err)
	}
	pre := &statedb.UpdateBatch{}
	for _, k := range []string{"a0", "a1", "a2", "a3", "a4", "a5"} {
		pre.Put("mt", k, []byte("100"), statedb.Height{})
	}
	if err := l.State.ApplyUpdates(pre, statedb.Height{}); err != nil {
		t.Fatal(err)
	}

	tx := func(cc string, rw txgen.NsRW, client protoutil.Signer, endorsers ...protoutil.Signer) []byte {
		t.Helper()
		version := "1.0"
		if cc == lscc.Namespace {
			version = ""
		}
		env, _, err := txgen.Endorse(n.Channel, txgen.Tx{Chaincode: cc, Version: version, Args: [][]byte{[]byte("invoke")},
			Results: txgen.Results(rw), Client: client, Endorsers: endorsers})
		if err != nil {
			t.Fatal(err)
		}
		return protoutil.MarshalOrPanic(env)
	}
	// transfer reads key at v and writes it.
	transfer := func(cc, key string, v *statedb.Height) txgen.NsRW {
		return txgen.NsRW{Namespace: cc, Reads: []*kvrwset.KVRead{txgen.Read(key, v)}, Writes: []*kvrwset.KVWrite{txgen.Write(key, []byte("99"))}}
	}
	zero := &statedb.Height{}
	at := func(b, i uint64) *statedb.Height { return &statedb.Height{BlockNum: b, TxNum: i} }
	badClient := txgen.Forged(n.Client, n.Peer)
	badPeer := txgen.Forged(n.Peer, n.Client)
	cd := &lscc.ChaincodeData{Name: "cc2", Version: "1.0", Escc: "escc", Vscc: "vscc",
		Policy: protoutil.MarshalOrPanic(policy.SignedByEachMember("Org1MSP", "Org2MSP"))}
	deploy := txgen.NsRW{Namespace: lscc.Namespace, Reads: []*kvrwset.KVRead{txgen.Read("cc2", nil)}, Writes: []*kvrwset.KVWrite{txgen.Write("cc2", cd.Marshal())}}

	block1 := [][]byte{
		tx(lscc.Namespace, deploy, n.Client, n.Peer),            // 0 VALID: deploys cc2
		tx("mt", transfer("mt", "a0", zero), n.Client, n.Peer),  // 1 VALID: a0 at 1:1
		tx("mt", transfer("mt", "a1", zero), badClient, n.Peer), // 2 bad creator
		tx("mt", transfer("mt", "a2", zero), n.Client, badPeer), // 3 forged endorsement
		tx("mt", transfer("mt", "a3", nil), n.Client, n.Peer),   // 4 stale: a3 was pre-loaded at 0:0
		tx("mt", transfer("mt", "a4", zero), n.Client, n.Peer),  // 5 VALID: a4 at 1:5
		tx("mt", transfer("mt", "a4", zero), n.Client, n.Peer),  // 6 a4 written by tx 5 in this block
	}
	r.want[[2]uint64{1, 2}] = "BAD_CREATOR_SIGNATURE"
	r.want[[2]uint64{1, 3}] = "ENDORSEMENT_POLICY_FAILURE"
	r.want[[2]uint64{1, 4}] = "MVCC_READ_CONFLICT"
	r.want[[2]uint64{1, 6}] = "MVCC_READ_CONFLICT"
	dupTx := tx("mt", transfer("mt", "a5", zero), n.Client, n.Peer)
	block2 := [][]byte{
		tx("cc2", transfer("cc2", "k", nil), n.Client, n.Peer, org2), // 0 VALID: both orgs endorse
		tx("cc2", transfer("cc2", "j", nil), n.Client, n.Peer),       // 1 Org1 alone: AND not met
		tx("mt", transfer("mt", "a0", at(1, 1)), n.Client, n.Peer),   // 2 VALID: reads what block 1 wrote
		tx("mt", transfer("mt", "a4", zero), n.Client, n.Peer),       // 3 stale: a4 is at 1:5
		dupTx, // 4 VALID
		dupTx, // 5 the same ID in the block
		tx("mt", transfer("mt", "a1", zero), n.Client, n.Peer), // 6 VALID: the bad creator of 1:2 wrote nothing
		tx("mt", transfer("mt", "a3", zero), n.Client, n.Peer), // 7 VALID: the stale read of 1:4 wrote nothing
	}
	r.want[[2]uint64{2, 1}] = "ENDORSEMENT_POLICY_FAILURE"
	r.want[[2]uint64{2, 3}] = "MVCC_READ_CONFLICT"
	r.want[[2]uint64{2, 5}] = "DUPLICATE_TXID"
	block3 := [][]byte{
		dupTx, // 0 the ID is in block 2
		tx("mt", transfer("mt", "a0", at(2, 2)), n.Client, n.Peer),         // 1 VALID
		tx("cc2", transfer("cc2", "k", at(2, 0)), badClient, n.Peer, org2), // 2 bad creator
		tx("cc2", transfer("cc2", "k", at(2, 0)), n.Client, org2, n.Peer),  // 3 VALID
	}
	r.want[[2]uint64{3, 0}] = "DUPLICATE_TXID"
	r.want[[2]uint64{3, 2}] = "BAD_CREATOR_SIGNATURE"

	prev := l.Store.LastBlockHash()
	for i, data := range [][][]byte{block1, block2, block3} {
		b, err := n.Block(uint64(i+1), prev, data)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := l.Committer.Commit(b); err != nil {
			t.Fatal(err)
		}
		prev = protoutil.BlockHeaderHash(b.Header)
	}
	r.blocks = readLedger(t, r.files())
	return r
}

// files are the ledger's block files, in order.
func (r *refLedger) files() []string {
	files, _ := filepath.Glob(filepath.Join(r.dir, "chains", "mychannel", "blockfile_*"))
	sort.Strings(files)
	return files
}

func readLedger(t *testing.T, files []string) []*cb.Block {
	t.Helper()
	var blocks []*cb.Block
	for _, p := range files {
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		bs, err := blockfile.Read(f)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		blocks = append(blocks, bs...)
	}
	if err := blockfile.Check(blocks); err != nil {
		t.Fatal(err)
	}
	return blocks
}

func countKinds(rows []Row, derived bool) map[string]int {
	out := map[string]int{}
	for _, r := range rows {
		c := r.Recorded
		if derived {
			c = r.Derived
		}
		out[CodeName(c)]++
	}
	return out
}

// TestReferenceLedgerEveryCodeAgrees: on the reference committer's ledger,
// the verifier's code equals the recorded one for every transaction, and
// the recorded codes are the ones each transaction was built to get.
func TestReferenceLedgerEveryCodeAgrees(t *testing.T) {
	r := buildRefLedger(t)
	res, err := Verify(r.blocks, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Txs != 1+7+8+4 || res.Checked != res.Txs || res.Disagree != 0 || res.Agree != res.Txs {
		t.Fatalf("txs %d checked %d agree %d disagree %d", res.Txs, res.Checked, res.Agree, res.Disagree)
	}
	for _, row := range res.Rows {
		want, ok := r.want[[2]uint64{row.Block, uint64(row.Index)}]
		if !ok {
			want = "VALID"
		}
		if CodeName(row.Recorded) != want || CodeName(row.Derived) != want {
			t.Errorf("block %d tx %d: recorded %s, derived %s (%s), built to be %s", row.Block, row.Index,
				CodeName(row.Recorded), CodeName(row.Derived), row.Reason, want)
		}
	}
	wantKinds := map[string]int{"VALID": 11, "BAD_CREATOR_SIGNATURE": 2, "ENDORSEMENT_POLICY_FAILURE": 2,
		"MVCC_READ_CONFLICT": 3, "DUPLICATE_TXID": 2}
	if got := countKinds(res.Rows, true); !equalCounts(got, wantKinds) {
		t.Fatalf("derived kinds %v, want %v", got, wantKinds)
	}
	if res.Source != "config block 0" || strings.Join(res.MSPIDs, ",") != "OrdererMSP,Org1MSP,Org2MSP" || res.Channel != "mychannel" {
		t.Fatalf("source %q msps %v channel %q", res.Source, res.MSPIDs, res.Channel)
	}
	if !strings.Contains(res.Policy, "lscc definitions (cc2)") || !strings.Contains(res.Policy, "OR('Org1MSP.member', 'Org2MSP.member') for mt") {
		t.Fatalf("policy source %q", res.Policy)
	}
	// --policy applies to mt, which the ledger does not define, not to cc2
	// (its lscc definition) nor to the lscc deploy: every mt transaction fails
	// VSCC now, unless a check before VSCC refuses it already.
	res, err = Verify(r.blocks, Options{Policy: "OR('Org2MSP.member')"})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, row := range res.Rows {
		got = append(got, strings.NewReplacer("ENDORSEMENT_POLICY_FAILURE", "EPF", "BAD_CREATOR_SIGNATURE", "BCS",
			"DUPLICATE_TXID", "DUP").Replace(CodeName(row.Derived)))
	}
	want := "VALID | VALID EPF BCS EPF EPF EPF EPF | VALID EPF EPF EPF EPF EPF EPF EPF | DUP EPF BCS VALID"
	if g := strings.Join(got[:1], " ") + " | " + strings.Join(got[1:8], " ") + " | " + strings.Join(got[8:16], " ") + " | " +
		strings.Join(got[16:], " "); g != want {
		t.Fatalf("with --policy OR('Org2MSP.member'):\n got %s\nwant %s", g, want)
	}
}

func equalCounts(a, b map[string]int) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// setFilter changes the recorded code of one transaction.
func setFilter(b *cb.Block, i int, c pb.TxValidationCode) {
	b.Metadata.Metadata[cb.BlockMetadataIndex_TRANSACTIONS_FILTER][i] = byte(c)
}

// TestFlippedRecordedCodeDisagrees: the negative control of the recorded
// side: one byte of a TRANSACTIONS_FILTER changed, and exactly that
// transaction disagrees.
func TestFlippedRecordedCodeDisagrees(t *testing.T) {
	r := buildRefLedger(t)
	setFilter(r.blocks[2], 4, pb.TxValidationCode_MVCC_READ_CONFLICT) // really VALID
	res, err := Verify(r.blocks, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Disagree != 1 {
		t.Fatalf("%d disagree, want 1", res.Disagree)
	}
	for _, row := range res.Rows {
		if !row.Agrees() && (row.Block != 2 || row.Index != 4 || row.Derived != pb.TxValidationCode_VALID) {
			t.Fatalf("unexpected disagreement %+v", row)
		}
	}
}

// rechain recomputes data hashes and previous hashes from block i on, after
// a transaction's bytes changed (the block signatures are not checked).
func rechain(blocks []*cb.Block, from int) {
	for i := from; i < len(blocks); i++ {
		blocks[i].Header.DataHash = protoutil.BlockDataHash(blocks[i].Data)
		if i > 0 {
			blocks[i].Header.PreviousHash = protoutil.BlockHeaderHash(blocks[i-1].Header)
		}
	}
}

// forgeCreator re-signs transaction i of block b with key's private key
// while it keeps its creator: recorded VALID, derived BAD_CREATOR_SIGNATURE.
func forgeCreator(t *testing.T, b *cb.Block, i int, key protoutil.Signer) {
	t.Helper()
	env := &cb.Envelope{}
	if err := proto.Unmarshal(b.Data.Data[i], env); err != nil {
		t.Fatal(err)
	}
	sig, err := key.Sign(env.Payload)
	if err != nil {
		t.Fatal(err)
	}
	env.Signature = sig
	b.Data.Data[i] = protoutil.MarshalOrPanic(env)
}

// TestForgedSignatureDisagrees: the negative control of the derived side: a
// transaction recorded VALID whose creator signature is replaced by
// another key's is found, with sampling too when it is sampled, and a
// forged endorsement is found as a policy failure.
func TestForgedSignatureDisagrees(t *testing.T) {
	r := buildRefLedger(t)
	forgeCreator(t, r.blocks[2], 0, r.net.Peer) // cc2, both endorsed: VALID recorded
	rechain(r.blocks, 2)
	if err := blockfile.Check(r.blocks); err != nil {
		t.Fatal(err)
	}
	res, err := Verify(r.blocks, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var bad []Row
	for _, row := range res.Rows {
		if !row.Agrees() {
			bad = append(bad, row)
		}
	}
	// Block 3 tx 3 read k at 2:0, which is now not written: it conflicts too.
	if len(bad) != 2 || bad[0].Block != 2 || bad[0].Index != 0 || bad[0].Derived != pb.TxValidationCode_BAD_CREATOR_SIGNATURE ||
		bad[1].Block != 3 || bad[1].Index != 3 || bad[1].Derived != pb.TxValidationCode_MVCC_READ_CONFLICT {
		t.Fatalf("disagreements %+v", bad)
	}
	if !strings.Contains(bad[0].Reason, "creator signature") {
		t.Fatalf("reason %q", bad[0].Reason)
	}
}

// TestSampleIsDeterministicAndKeepsInvalid: with --sample, the recorded
// invalid transactions are always checked, the choice depends only on the
// seed, and an unsampled transaction whose MVCC check fails though recorded
// VALID is checked after all.
func TestSampleIsDeterministicAndKeepsInvalid(t *testing.T) {
	r := buildRefLedger(t)
	a, err := Verify(r.blocks, Options{Sample: 0.3, Seed: 5})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := Verify(r.blocks, Options{Sample: 0.3, Seed: 5})
	if a.Disagree != 0 || a.Checked >= a.Txs || a.Checked != b.Checked {
		t.Fatalf("sample: checked %d of %d (again %d), disagree %d", a.Checked, a.Txs, b.Checked, a.Disagree)
	}
	for i := range a.Rows {
		if a.Rows[i] != b.Rows[i] {
			t.Fatalf("the sample differs between runs: %+v / %+v", a.Rows[i], b.Rows[i])
		}
	}
	invalid := 0
	for _, row := range a.Rows {
		if row.Recorded != pb.TxValidationCode_VALID {
			invalid++
		}
	}
	if invalid != 9 {
		t.Fatalf("%d recorded-invalid transactions checked, want all 9", invalid)
	}

	// A stale read recorded VALID is found without being sampled.
	setFilter(r.blocks[2], 3, pb.TxValidationCode_VALID)
	var unsampled *verifier
	for seed := uint64(0); ; seed++ {
		unsampled = &verifier{o: Options{Seed: seed}, sampleFrac: 0.01}
		if !unsampled.sampled(2, 3) {
			c, err := Verify(r.blocks, Options{Sample: 0.01, Seed: seed})
			if err != nil {
				t.Fatal(err)
			}
			if c.Disagree != 1 {
				t.Fatalf("seed %d: %d disagree, want 1 (%+v)", seed, c.Disagree, c.Rows)
			}
			break
		}
	}
}

// TestMSPDirWhereTheLedgerHasNoConfigBlock: without block 0, the MSPs must
// come from --msp-dir (this repository's crypto directory, or MSPID=DIR);
// without it the verifier refuses.
func TestMSPDirWhereTheLedgerHasNoConfigBlock(t *testing.T) {
	r := buildRefLedger(t)
	tail := r.blocks[1:]
	if _, err := Verify(tail, Options{}); err == nil || !strings.Contains(err.Error(), "no MSP") {
		t.Fatalf("no config block and no --msp-dir: %v", err)
	}
	crypto := r.net.CryptoDir
	res, err := Verify(tail, Options{MSPDirs: []string{crypto}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Disagree != 0 || res.Txs != 19 || !strings.HasPrefix(res.Source, "--msp-dir ") {
		t.Fatalf("with --msp-dir: %+v", res)
	}
	// Org2's MSP missing: the transactions it endorses or signs fail.
	res, err = Verify(tail, Options{MSPDirs: []string{
		"Org1MSP=" + filepath.Join(crypto, "peerOrganizations/org1.example.com/peers/peer0.org1.example.com/msp")}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Disagree == 0 {
		t.Fatal("without Org2MSP every transaction still agrees")
	}
	// Files from block 2 on: a0, read at 1:1 in block 2, is taken as written
	// there, so its transfer agrees; what only blocks 0-1 tell is lost: cc2's
	// AND policy (2:1 is derived VALID under the default) and a4's real
	// version (the stale read 2:3 of 0:0 looks current).
	res, err = Verify(r.blocks[2:], Options{MSPDirs: []string{crypto}})
	if err != nil {
		t.Fatal(err)
	}
	var bad []string
	for _, row := range res.Rows {
		if !row.Agrees() {
			bad = append(bad, fmt.Sprintf("%d:%d %s", row.Block, row.Index, CodeName(row.Derived)))
		}
	}
	if strings.Join(bad, ", ") != "2:1 VALID, 2:3 VALID" || !strings.Contains(res.Source, "start at block 2") {
		t.Fatalf("from block 2: disagreements %v, source %q", bad, res.Source)
	}
	if _, err := MembershipFromDir(filepath.Join(crypto, "peerOrganizations/org1.example.com/peers/peer0.org1.example.com/msp")); err == nil {
		t.Fatal("an MSP directory without an ID was taken")
	}
}

// TestConfigTransactionAfterGenesis: Fabric 1.2 gives a later CONFIG
// transaction VALID once its creator's signature verifies.
func TestConfigTransactionAfterGenesis(t *testing.T) {
	dir := t.TempDir()
	n, err := txgen.NewNetwork(filepath.Join(dir, "crypto"), "mychannel", 1)
	if err != nil {
		t.Fatal(err)
	}
	_, _, cfg, err := configEnvelope(n.Genesis.Data.Data[0])
	if err != nil {
		t.Fatal(err)
	}
	block := func(signer protoutil.Signer, prev *cb.Block) *cb.Block {
		env, err := protoutil.SignedEnvelope(cb.HeaderType_CONFIG, "mychannel", signer, &cb.ConfigEnvelope{Config: cfg})
		if err != nil {
			t.Fatal(err)
		}
		b, err := n.Block(prev.Header.Number+1, protoutil.BlockHeaderHash(prev.Header), [][]byte{protoutil.MarshalOrPanic(env)})
		if err != nil {
			t.Fatal(err)
		}
		b.Metadata.Metadata[cb.BlockMetadataIndex_TRANSACTIONS_FILTER] = []byte{byte(pb.TxValidationCode_VALID)}
		return b
	}
	gen := proto.Clone(n.Genesis).(*cb.Block)
	gen.Metadata.Metadata[cb.BlockMetadataIndex_TRANSACTIONS_FILTER] = []byte{0}
	b1 := block(n.Orderer, gen)
	b2 := block(txgen.Forged(n.Orderer, n.Peer), b1)
	res, err := Verify([]*cb.Block{gen, b1, b2}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	got := []string{}
	for _, r := range res.Rows {
		got = append(got, CodeName(r.Derived))
	}
	if strings.Join(got, " ") != "VALID VALID BAD_CREATOR_SIGNATURE" {
		t.Fatalf("config codes %v", got)
	}
}

func TestParsePolicy(t *testing.T) {
	env, err := ParsePolicy(DefaultPolicy)
	if err != nil {
		t.Fatal(err)
	}
	if !proto.Equal(env, policy.SignedByAnyMember("Org1MSP")) {
		t.Fatalf("%s is not SignedByAnyMember(Org1MSP): %v", DefaultPolicy, env)
	}
	env, err = ParsePolicy(`and('Org1MSP.member', "Org2MSP.member")`)
	if err != nil || !proto.Equal(env, policy.SignedByEachMember("Org1MSP", "Org2MSP")) {
		t.Fatalf("AND: %v %v", env, err)
	}
	env, err = ParsePolicy("OutOf(2, 'A.peer', OR('B.client', 'C.admin'), 'D.member')")
	if err != nil || len(env.Identities) != 4 || env.Rule.GetNOutOf().N != 2 || len(env.Rule.GetNOutOf().Rules) != 3 {
		t.Fatalf("OutOf: %v %v", env, err)
	}
	for _, bad := range []string{"", "'Org1MSP.member'", "OR('Org1MSP.owner')", "OR('Org1MSP.member'", "XOR('A.member')", "OR('A.member')x", "OutOf('A.member')"} {
		if _, err := ParsePolicy(bad); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}
