package blockfile

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReadFilesJoinsFilesInOrderAndNamesTheBadOne: a ledger split over two
// files reads as one chain; a cut file's error names it.
func TestReadFilesJoinsFilesInOrderAndNamesTheBadOne(t *testing.T) {
	blocks := chain(5)
	dir := t.TempDir()
	first, second := filepath.Join(dir, "blockfile_000000"), filepath.Join(dir, "blockfile_000001")
	if err := os.WriteFile(first, file(blocks[:3]), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(second, file(blocks[3:]), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := ReadFiles([]string{first, second})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 5 || Check(got) != nil {
		t.Fatalf("%d blocks, check %v", len(got), Check(got))
	}
	whole := file(blocks[3:])
	if err := os.WriteFile(second, whole[:len(whole)-3], 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadFiles([]string{first, second}); !errors.Is(err, ErrCutRecord) || !strings.Contains(err.Error(), second) {
		t.Fatalf("cut second file: %v", err)
	}
	if _, err := ReadFiles([]string{filepath.Join(dir, "missing")}); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("missing file: %v", err)
	}
}
