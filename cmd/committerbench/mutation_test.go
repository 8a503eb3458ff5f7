package main

import (
	"encoding/csv"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"fabricrepro/internal/blockfile"
	cb "fabricrepro/internal/protos/common"
)

// expectedCode is the validator's code for each mutation (internal/validation).
var expectedCode = map[string]string{
	BadCreator:     "BAD_CREATOR_SIGNATURE",
	BadEndorsement: "ENDORSEMENT_POLICY_FAILURE",
	StaleRead:      "MVCC_READ_CONFLICT",
}

func readCSV(t *testing.T, path, header string) [][]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) == 0 || fmt.Sprint(rows[0]) != fmt.Sprint(splitHeader(header)) {
		t.Fatalf("%s: header %v, want %s", path, rows, header)
	}
	return rows[1:]
}

func splitHeader(h string) []string { return strings.Split(h, ",") }

// ledgerBlocks decodes the committed ledger's block files with
// internal/blockfile and checks their chain.
func ledgerBlocks(t *testing.T, dataDir string) []*cb.Block {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dataDir, "chains", "mychannel", "blockfile_*"))
	sort.Strings(files)
	if len(files) == 0 {
		t.Fatal("no block files in the ledger")
	}
	blocks, err := blockfile.ReadFiles(files)
	if err != nil {
		t.Fatal(err)
	}
	if err := blockfile.Check(blocks); err != nil {
		t.Fatal(err)
	}
	return blocks
}

// validMismatches compares claimed valid counts per block with the
// ledger's (from its TRANSACTIONS_FILTER codes) and lists every difference;
// this is the check the harness makes of a driver's counts.
func validMismatches(ledger []*cb.Block, claimed map[uint64]int) []string {
	var out []string
	seen := map[uint64]bool{}
	for _, b := range ledger {
		n := b.Header.Number
		if n == 0 {
			continue // genesis, not a measured block
		}
		seen[n] = true
		c, ok := claimed[n]
		if !ok {
			out = append(out, fmt.Sprintf("block %d: no claimed count", n))
		} else if v := blockfile.ValidCount(b); c != v {
			out = append(out, fmt.Sprintf("block %d: claimed %d valid, ledger %d", n, c, v))
		}
	}
	for n := range claimed {
		if !seen[n] {
			out = append(out, fmt.Sprintf("block %d: claimed but not in the ledger", n))
		}
	}
	sort.Strings(out)
	return out
}

// TestMutationsAreExactlyTheLedgersInvalidTransactions runs the committer
// over blocks with 10% of each mutation and proves from the ledger's own
// validation codes that exactly the mutated transactions are invalid, with
// the mutation's code, and every other one VALID; blocks.csv's valid_count
// must be the ledger's, and the driver's word (all valid) must not pass.
func TestMutationsAreExactlyTheLedgersInvalidTransactions(t *testing.T) {
	dir := t.TempDir()
	cfg := Config{Blocks: 5, BlockSize: 20, PayloadBytes: 16, Quiet: true, DataDir: filepath.Join(dir, "ledger"),
		CorruptCreatorFraction: 0.1, CorruptEndorsementFraction: 0.1, StaleReadFraction: 0.1, MutationSeed: 7}
	out, mutOut := filepath.Join(dir, "blocks.csv"), filepath.Join(dir, "mutations.csv")
	s, err := run(cfg, out, mutOut)
	if err != nil {
		t.Fatal(err)
	}

	type key struct {
		block uint64
		index int
	}
	want := map[key]string{}
	wantID := map[key]string{}
	perKind := map[string]int{}
	for _, r := range readCSV(t, mutOut, MutationsHeader) {
		b, _ := strconv.ParseUint(r[0], 10, 64)
		i, _ := strconv.Atoi(r[1])
		code, ok := expectedCode[r[3]]
		if !ok || r[2] == "" {
			t.Fatalf("bad mutations row %v", r)
		}
		want[key{b, i}], wantID[key{b, i}] = code, r[2]
		perKind[r[3]]++
	}
	for kind := range expectedCode {
		if perKind[kind] != 10 { // 10% of 100
			t.Errorf("%s: %d mutated, want 10", kind, perKind[kind])
		}
	}
	if len(want) != 30 || s.Mutated != 30 {
		t.Fatalf("%d distinct mutated transactions, summary %d; want 30", len(want), s.Mutated)
	}

	ledger := ledgerBlocks(t, cfg.DataDir)
	if len(ledger) != cfg.Blocks+1 {
		t.Fatalf("ledger holds %d blocks, want %d", len(ledger), cfg.Blocks+1)
	}
	invalid := 0
	for _, b := range ledger[1:] {
		for _, tx := range blockfile.Txs(b) {
			k := key{b.Header.Number, tx.Index}
			code, mutated := want[k]
			if !mutated {
				code = "VALID"
			}
			if tx.CodeName() != code {
				t.Errorf("block %d tx %d: ledger code %s, want %s", k.block, k.index, tx.CodeName(), code)
			}
			if mutated && tx.TxID != wantID[k] {
				t.Errorf("block %d tx %d: ledger tx ID %s, mutations.csv %s", k.block, k.index, tx.TxID, wantID[k])
			}
			if tx.CodeName() != "VALID" {
				invalid++
			}
		}
	}
	if invalid != 30 || s.Valid != 70 || s.Txs != 100 {
		t.Errorf("ledger: %d invalid; summary %d valid of %d; want 30, 70 of 100", invalid, s.Valid, s.Txs)
	}

	// blocks.csv's valid_count is the committer's, so it must equal the ledger's.
	reported := map[uint64]int{}
	for _, r := range readCSV(t, out, "block_number,tx_count,valid_count,bytes,received_ns,validated_ns,committed_ns,vscc_ns,mvcc_ns,block_commit_ns,state_commit_ns,history_commit_ns") {
		b, _ := strconv.ParseUint(r[0], 10, 64)
		v, _ := strconv.Atoi(r[2])
		reported[b] = v
	}
	if m := validMismatches(ledger, reported); len(m) != 0 {
		t.Errorf("blocks.csv disagrees with the ledger: %v", m)
	}

	// Not vacuous: the driver's word with the mutations ignored (every
	// transfer valid) must be caught, on every block that holds a mutation.
	naive := map[uint64]int{}
	mutatedBlocks := map[uint64]bool{}
	for k := range want {
		mutatedBlocks[k.block] = true
	}
	for n := uint64(1); n <= uint64(cfg.Blocks); n++ {
		naive[n] = cfg.BlockSize
	}
	if m := validMismatches(ledger, naive); len(m) != len(mutatedBlocks) || len(m) == 0 {
		t.Errorf("all-valid counts: mismatches %v, want one per mutated block (%d)", m, len(mutatedBlocks))
	}
}

// TestMutationChoiceIsSeededAndExact: the same seed gives the same set, the
// counts are round(fraction*transactions), and impossible fractions fail.
func TestMutationChoiceIsSeededAndExact(t *testing.T) {
	cfg := Config{Blocks: 10, BlockSize: 30, CorruptCreatorFraction: 0.05, StaleReadFraction: 0.25, MutationSeed: 3}
	a, err := chooseMutations(cfg)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := chooseMutations(cfg)
	if fmt.Sprint(a) != fmt.Sprint(b) {
		t.Fatal("same seed, different mutations")
	}
	n := map[string]int{}
	seen := map[[2]int]bool{}
	for _, m := range a {
		n[m.kind]++
		if seen[[2]int{m.k, m.j}] {
			t.Fatalf("transfer %d/%d mutated twice", m.k, m.j)
		}
		seen[[2]int{m.k, m.j}] = true
	}
	if n[BadCreator] != 15 || n[StaleRead] != 75 || n[BadEndorsement] != 0 {
		t.Fatalf("counts %v, want 15 bad_creator and 75 stale_read", n)
	}
	cfg.MutationSeed = 4
	if c, _ := chooseMutations(cfg); fmt.Sprint(c) == fmt.Sprint(a) {
		t.Error("another seed chose the same set")
	}
	if m, err := chooseMutations(Config{Blocks: 1, BlockSize: 10}); err != nil || len(m) != 0 {
		t.Errorf("no fractions: %v, %v", m, err)
	}
	for _, bad := range []Config{
		{Blocks: 1, BlockSize: 10, StaleReadFraction: 1.5},
		{Blocks: 1, BlockSize: 10, CorruptCreatorFraction: -0.1},
		{Blocks: 1, BlockSize: 10, CorruptCreatorFraction: 0.6, StaleReadFraction: 0.5},
	} {
		if _, err := chooseMutations(bad); err == nil {
			t.Errorf("%+v: want an error", bad)
		}
	}
}
