package main

import (
	"bytes"
	"compress/gzip"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"fabricrepro/internal/blockfile"
	"fabricrepro/internal/msp"
	cb "fabricrepro/internal/protos/common"
	pb "fabricrepro/internal/protos/peer"
	"fabricrepro/internal/protoutil"
)

// A committerbench ledger of 4 blocks of 100 transfers with 3 of each
// mutation (as tests/upstream/test_validity_mutations.py runs it).
const (
	benchBlocks, benchBlockSize = 4, 100
	fraction                    = 0.0075
)

var mutationCode = map[string]string{
	"bad_creator":     "BAD_CREATOR_SIGNATURE",
	"bad_endorsement": "ENDORSEMENT_POLICY_FAILURE",
	"stale_read":      "MVCC_READ_CONFLICT",
}

type benchLedger struct {
	files     []string
	crypto    string
	mutations map[string]string // tx ID -> mutation
}

var (
	benchOnce sync.Once
	bench     *benchLedger
	benchErr  error
	benchDir  string
)

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "txverify-test-")
	if err != nil {
		panic(err)
	}
	benchDir = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// committerbenchLedger builds cmd/committerbench and runs it once with
// mutations; the tests share the ledger (and copy it before changing it).
func committerbenchLedger(t *testing.T) *benchLedger {
	t.Helper()
	benchOnce.Do(func() { bench, benchErr = makeBenchLedger(benchDir) })
	if benchErr != nil {
		t.Fatal(benchErr)
	}
	return bench
}

func makeBenchLedger(dir string) (*benchLedger, error) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		return nil, fmt.Errorf("go is not on PATH: %w", err)
	}
	bin := filepath.Join(dir, "committerbench")
	if out, err := exec.Command(gobin, "build", "-o", bin, "fabricrepro/cmd/committerbench").CombinedOutput(); err != nil {
		return nil, fmt.Errorf("build committerbench: %v\n%s", err, out)
	}
	crypto := filepath.Join(dir, "crypto")
	if _, err := msp.Generate(crypto, msp.NetworkSpec{OrdererOrgs: 1, Orderers: 1, PeerOrgs: 1, Peers: 1, Clients: 1}); err != nil {
		return nil, err
	}
	cfg := fmt.Sprintf("blocks: %d\nblockSize: %d\npayloadBytes: 64\nquiet: true\nsync: false\ncryptoDir: %s\ndataDir: %s\n"+
		"corruptCreatorFraction: %v\ncorruptEndorsementFraction: %v\nstaleReadFraction: %v\nmutationSeed: 11\n",
		benchBlocks, benchBlockSize, crypto, filepath.Join(dir, "ledger"), fraction, fraction, fraction)
	if err := os.WriteFile(filepath.Join(dir, "bench.yaml"), []byte(cfg), 0o644); err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, "--config", filepath.Join(dir, "bench.yaml"), "--out", filepath.Join(dir, "blocks.csv"))
	if out, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("committerbench: %v\n%s", err, out)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "ledger", "chains", "mychannel", "blockfile_*"))
	sort.Strings(files)
	if len(files) == 0 {
		return nil, fmt.Errorf("no block file under %s", dir)
	}
	raw, err := os.ReadFile(filepath.Join(dir, "mutations.csv"))
	if err != nil {
		return nil, err
	}
	rows, err := csv.NewReader(bytes.NewReader(raw)).ReadAll()
	if err != nil {
		return nil, err
	}
	l := &benchLedger{files: files, crypto: crypto, mutations: map[string]string{}}
	for _, r := range rows[1:] {
		l.mutations[r[2]] = r[3]
	}
	return l, nil
}

type outcome struct {
	code    int
	rows    [][]string // without the header
	stderr  string
	summary Summary
}

func runTxverify(t *testing.T, args ...string) outcome {
	t.Helper()
	var stdout, stderr bytes.Buffer
	o := outcome{code: run(args, &stdout, &stderr), stderr: stderr.String()}
	if o.code == 2 {
		return o
	}
	lines := strings.Split(strings.TrimSpace(o.stderr), "\n")
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &o.summary); err != nil {
		t.Fatalf("stderr's last line is not the JSON summary: %v\n%s", err, o.stderr)
	}
	if o.code == 1 {
		return o
	}
	rows, err := csv.NewReader(&stdout).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) == 0 || strings.Join(rows[0], ",") != "block_number,tx_index,tx_id,recorded_code,derived_code" {
		t.Fatalf("CSV header %v", rows)
	}
	o.rows = rows[1:]
	return o
}

func kinds(rows [][]string, col int) map[string]int {
	out := map[string]int{}
	for _, r := range rows {
		out[r[col]]++
	}
	return out
}

// TestCommitterbenchLedgerAgrees: on the reference committer benchmark's
// ledger with 3 of each mutation, every derived code equals the recorded
// one, the mutated transactions carry their mutation's code and no other
// transaction is invalid.
func TestCommitterbenchLedgerAgrees(t *testing.T) {
	l := committerbenchLedger(t)
	o := runTxverify(t, l.files...)
	if o.code != 0 {
		t.Fatalf("exit %d\n%s", o.code, o.stderr)
	}
	total := 1 + benchBlocks*benchBlockSize
	if o.summary.Txs != total || o.summary.Checked != total || o.summary.Agree != total || o.summary.Disagree != 0 {
		t.Fatalf("summary %+v", o.summary)
	}
	if o.summary.Source != "config block 0" || o.summary.PrestateKeys == 0 {
		t.Fatalf("summary %+v", o.summary)
	}
	want := map[string]int{"VALID": total - 9, "BAD_CREATOR_SIGNATURE": 3, "ENDORSEMENT_POLICY_FAILURE": 3, "MVCC_READ_CONFLICT": 3}
	for _, col := range []int{3, 4} {
		if got := kinds(o.rows, col); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("column %d: %v, want %v", col, got, want)
		}
	}
	for _, r := range o.rows {
		m, mutated := l.mutations[r[2]]
		wantCode := "VALID"
		if mutated {
			wantCode = mutationCode[m]
		}
		if r[4] != wantCode {
			t.Errorf("block %s tx %s (%s): derived %s, mutation %q", r[0], r[1], r[2], r[4], m)
		}
	}
	if len(l.mutations) != 9 {
		t.Fatalf("%d mutations, want 9", len(l.mutations))
	}
}

// readBlocks decodes files into blocks.
func readBlocks(t *testing.T, files []string) []*cb.Block {
	t.Helper()
	blocks, err := blockfile.ReadFiles(files)
	if err != nil {
		t.Fatal(err)
	}
	return blocks
}

// writeBlocks writes blocks as the reference block store frames them (a
// varint length, then the marshaled block), which blockfile.Read reads.
func writeBlocks(t *testing.T, path string, blocks []*cb.Block) {
	t.Helper()
	var buf []byte
	for _, b := range blocks {
		raw := protoutil.MarshalOrPanic(b)
		buf = protowire.AppendVarint(buf, uint64(len(raw)))
		buf = append(buf, raw...)
	}
	if err := os.WriteFile(path, buf, 0o644); err != nil {
		t.Fatal(err)
	}
}

// findRow is the CSV row of a block and index.
func findRow(rows [][]string, block uint64, index int) []string {
	for _, r := range rows {
		if r[0] == fmt.Sprint(block) && r[1] == fmt.Sprint(index) {
			return r
		}
	}
	return nil
}

// TestFlippedFilterByteExits3: one byte of one block's TRANSACTIONS_FILTER
// changed (VALID recorded as MVCC_READ_CONFLICT) is the one disagreement,
// shown in the CSV and on stderr, and the exit status is 3.
func TestFlippedFilterByteExits3(t *testing.T) {
	l := committerbenchLedger(t)
	blocks := readBlocks(t, l.files)
	b := blocks[2]
	idx := -1
	for i, tx := range blockfile.Txs(b) {
		if tx.Code == pb.TxValidationCode_VALID && l.mutations[tx.TxID] == "" {
			idx = i
			break
		}
	}
	b.Metadata.Metadata[cb.BlockMetadataIndex_TRANSACTIONS_FILTER][idx] = byte(pb.TxValidationCode_MVCC_READ_CONFLICT)
	path := filepath.Join(t.TempDir(), "blockfile_000000")
	writeBlocks(t, path, blocks)
	o := runTxverify(t, path)
	if o.code != 3 || o.summary.Disagree != 1 {
		t.Fatalf("exit %d, summary %+v", o.code, o.summary)
	}
	r := findRow(o.rows, 2, idx)
	if r == nil || r[3] != "MVCC_READ_CONFLICT" || r[4] != "VALID" {
		t.Fatalf("row of block 2 tx %d: %v", idx, r)
	}
	if !strings.Contains(o.stderr, fmt.Sprintf("disagree: block 2 tx %d (%s): recorded MVCC_READ_CONFLICT, derived VALID", idx, r[2])) {
		t.Fatalf("stderr:\n%s", o.stderr)
	}
}

// TestForgedSignatureExits3: a transaction of the last block recorded VALID
// whose creator signature is replaced by another transaction's (a valid
// signature of the same creator over other bytes) is derived
// BAD_CREATOR_SIGNATURE, exit 3; the chain's hashes are made right again so
// that only the signature is wrong.
func TestForgedSignatureExits3(t *testing.T) {
	l := committerbenchLedger(t)
	blocks := readBlocks(t, l.files)
	last := blocks[len(blocks)-1]
	txs := blockfile.Txs(last)
	victim, donor := -1, -1
	for i, tx := range txs {
		if tx.Code != pb.TxValidationCode_VALID || l.mutations[tx.TxID] != "" {
			continue
		}
		if victim < 0 {
			victim = i
		} else {
			donor = i
			break
		}
	}
	env, other := &cb.Envelope{}, &cb.Envelope{}
	if err := proto.Unmarshal(last.Data.Data[victim], env); err != nil {
		t.Fatal(err)
	}
	if err := proto.Unmarshal(last.Data.Data[donor], other); err != nil {
		t.Fatal(err)
	}
	env.Signature = other.Signature
	last.Data.Data[victim] = protoutil.MarshalOrPanic(env)
	last.Header.DataHash = protoutil.BlockDataHash(last.Data)
	if err := blockfile.Check(blocks[:len(blocks)-1]); err != nil {
		t.Fatal(err)
	}
	last.Header.PreviousHash = protoutil.BlockHeaderHash(blocks[len(blocks)-2].Header)
	path := filepath.Join(t.TempDir(), "blockfile_000000")
	writeBlocks(t, path, blocks)

	o := runTxverify(t, path)
	if o.code != 3 || o.summary.Disagree != 1 {
		t.Fatalf("exit %d, summary %+v\n%s", o.code, o.summary, o.stderr)
	}
	r := findRow(o.rows, last.Header.Number, victim)
	if r == nil || r[3] != "VALID" || r[4] != "BAD_CREATOR_SIGNATURE" {
		t.Fatalf("row of the forged transaction: %v", r)
	}
	if !strings.Contains(o.stderr, "creator signature") {
		t.Fatalf("stderr gives no reason:\n%s", o.stderr)
	}
	// With a sample, the forged transaction is found when it is sampled.
	o = runTxverify(t, "--sample", "1", path)
	if o.code != 3 {
		t.Fatalf("--sample 1: exit %d", o.code)
	}
}

// TestSampleChecksInvalidAndAShare: --sample 0.1 verifies every recorded
// invalid transaction and about a tenth of the others, the same ones for the
// same seed, and agrees; the flags may follow the files.
func TestSampleChecksInvalidAndAShare(t *testing.T) {
	l := committerbenchLedger(t)
	a := runTxverify(t, append([]string{"--sample", "0.1", "--seed", "3"}, l.files...)...)
	b := runTxverify(t, append(append([]string{}, l.files...), "--seed", "3", "--sample", "0.1")...)
	if a.code != 0 || b.code != 0 {
		t.Fatalf("exit %d / %d\n%s", a.code, b.code, a.stderr)
	}
	if fmt.Sprint(a.rows) != fmt.Sprint(b.rows) {
		t.Fatal("the same seed chose other transactions")
	}
	got := kinds(a.rows, 3)
	if got["BAD_CREATOR_SIGNATURE"] != 3 || got["ENDORSEMENT_POLICY_FAILURE"] != 3 || got["MVCC_READ_CONFLICT"] != 3 {
		t.Fatalf("recorded-invalid transactions checked: %v", got)
	}
	if v := got["VALID"]; v < 15 || v > 80 {
		t.Fatalf("%d valid transactions sampled of %d at 0.1", v, a.summary.Txs)
	}
	if a.summary.Checked != len(a.rows) || a.summary.Txs != 1+benchBlocks*benchBlockSize {
		t.Fatalf("summary %+v, %d rows", a.summary, len(a.rows))
	}
	c := runTxverify(t, append([]string{"--sample", "0.1", "--seed", "4"}, l.files...)...)
	if fmt.Sprint(c.rows) == fmt.Sprint(a.rows) {
		t.Fatal("another seed chose the same transactions")
	}
}

// TestNoConfigBlockNeedsMSPDir: the ledger without block 0 has no MSP
// (exit 1) unless --msp-dir gives the crypto directory (exit 0).
func TestNoConfigBlockNeedsMSPDir(t *testing.T) {
	l := committerbenchLedger(t)
	blocks := readBlocks(t, l.files)
	path := filepath.Join(t.TempDir(), "blockfile_000001")
	writeBlocks(t, path, blocks[1:])
	o := runTxverify(t, path)
	if o.code != 1 || !strings.Contains(o.summary.Error, "no MSP") {
		t.Fatalf("exit %d, summary %+v", o.code, o.summary)
	}
	o = runTxverify(t, "--msp-dir", l.crypto, path)
	if o.code != 0 || o.summary.Disagree != 0 || o.summary.Txs != benchBlocks*benchBlockSize {
		t.Fatalf("with --msp-dir: exit %d, summary %+v\n%s", o.code, o.summary, o.stderr)
	}
	if !strings.HasPrefix(o.summary.Source, "--msp-dir ") {
		t.Fatalf("source %q", o.summary.Source)
	}
}

// TestUsageAndReadErrors: bad usage exits 2; an unreadable file or a broken
// chain exits 1 with the JSON line naming the error.
func TestUsageAndReadErrors(t *testing.T) {
	for _, args := range [][]string{{}, {"--sample", "0", "x"}, {"--sample", "1.5", "x"}, {"--policy", "XOR('A.member')", "x"},
		{"--bogus", "x"}, {"--prestate", "full", "x"}} {
		if o := runTxverify(t, args...); o.code != 2 {
			t.Errorf("%v: exit %d, want 2", args, o.code)
		}
	}
	o := runTxverify(t, filepath.Join(t.TempDir(), "missing"))
	if o.code != 1 || o.summary.Error == "" {
		t.Fatalf("missing file: exit %d %+v", o.code, o.summary)
	}
	l := committerbenchLedger(t)
	blocks := readBlocks(t, l.files)
	path := filepath.Join(t.TempDir(), "blockfile_000000")
	writeBlocks(t, path, append([]*cb.Block{blocks[0]}, blocks[2:]...)) // block 1 missing
	o = runTxverify(t, path)
	if o.code != 1 || !strings.Contains(o.summary.Error, "chain") {
		t.Fatalf("broken chain: exit %d %+v", o.code, o.summary)
	}
}

// TestRules: --rules must be auto, v1 or v2; a Fabric 1.2-shaped ledger (the
// reference build's, no V2_0 capability) is checked with the v1 rules and
// its summary names none; a real Fabric v3.1.5 ledger (blocks 0-4 of a
// SmartBFT channel, internal/txverify/testdata) gets the v2 rules and
// agrees on every transaction, its orderers' signatures verified.
func TestRules(t *testing.T) {
	if o := runTxverify(t, "--rules", "v3", "x"); o.code != 2 {
		t.Fatalf("--rules v3: exit %d, want 2", o.code)
	}
	l := committerbenchLedger(t)
	o := runTxverify(t, l.files...)
	if o.code != 0 || o.summary.Rules != "" {
		t.Fatalf("v1 ledger: exit %d, rules %q", o.code, o.summary.Rules)
	}
	raw, err := os.ReadFile("../../internal/txverify/testdata/v31-bft-blocks0-4.gz")
	if err != nil {
		t.Fatal(err)
	}
	z, err := gzip.NewReader(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	data, err := io.ReadAll(z)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "blockfile_000000")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	o = runTxverify(t, path)
	if o.code != 0 || o.summary.Rules != "v2" || o.summary.Txs != 187 || o.summary.Agree != 187 ||
		!strings.Contains(o.summary.Source, "BlockValidation (BFT)") {
		t.Fatalf("v3.1 ledger: exit %d %+v\n%s", o.code, o.summary, o.stderr)
	}
	if o = runTxverify(t, "--rules", "v1", path); o.code != 3 || o.summary.Rules != "" {
		t.Fatalf("v1 rules forced on a v3.1 ledger: exit %d %+v", o.code, o.summary)
	}
}
