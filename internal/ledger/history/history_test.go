package history

import (
	"testing"

	"fabricrepro/internal/ledger/statedb"
)

func TestCommitAndKeyHistory(t *testing.T) {
	dir := t.TempDir()
	d, err := Open(dir, true)
	if err != nil {
		t.Fatal(err)
	}
	d.Commit(1, []Write{{"cc", "a", 0}, {"cc", "ab", 1}})
	d.Commit(2, []Write{{"cc", "a", 3}})
	d.Close()
	d, _ = Open(dir, true)
	defer d.Close()
	hs, err := d.KeyHistory("cc", "a")
	if err != nil || len(hs) != 2 || hs[0] != (statedb.Height{BlockNum: 1}) || hs[1] != (statedb.Height{BlockNum: 2, TxNum: 3}) {
		t.Fatalf("history of a: %v %v", hs, err)
	}
	if sp, ok, _ := d.Savepoint(); !ok || sp != 2 {
		t.Fatalf("savepoint %d %v", sp, ok)
	}
}
