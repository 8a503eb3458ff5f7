package leveldb

import (
	"bytes"
	"testing"

	"fabricrepro/internal/ledger/statedb"
)

func TestApplyGetReopen(t *testing.T) {
	dir := t.TempDir()
	db, err := Open(dir, DefaultOptions)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := db.Savepoint(); ok {
		t.Fatal("fresh db has a savepoint")
	}
	b := &statedb.UpdateBatch{}
	b.Put("cc", "a", []byte("1"), statedb.Height{BlockNum: 1, TxNum: 0})
	b.Put("cc", "b", []byte("2"), statedb.Height{BlockNum: 1, TxNum: 1})
	b.Put("cc2", "a", []byte("other ns"), statedb.Height{BlockNum: 1, TxNum: 2})
	if err := db.ApplyUpdates(b, statedb.Height{BlockNum: 1, TxNum: 2}); err != nil {
		t.Fatal(err)
	}
	b = &statedb.UpdateBatch{}
	b.Delete("cc", "b", statedb.Height{BlockNum: 2})
	b.Put("cc", "a", []byte("3"), statedb.Height{BlockNum: 2, TxNum: 5})
	if err := db.ApplyUpdates(b, statedb.Height{BlockNum: 2, TxNum: 5}); err != nil {
		t.Fatal(err)
	}
	db.Close()
	db, err = Open(dir, DefaultOptions)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	v, err := db.GetState("cc", "a")
	if err != nil || v == nil || string(v.Value) != "3" || v.Version != (statedb.Height{BlockNum: 2, TxNum: 5}) {
		t.Fatalf("cc/a = %+v, %v", v, err)
	}
	if v, _ := db.GetState("cc", "b"); v != nil {
		t.Fatalf("deleted key still there: %+v", v)
	}
	if v, _ := db.GetState("cc2", "a"); v == nil || string(v.Value) != "other ns" {
		t.Fatalf("cc2/a = %+v", v)
	}
	sp, ok, err := db.Savepoint()
	if !ok || err != nil || sp != (statedb.Height{BlockNum: 2, TxNum: 5}) {
		t.Fatalf("savepoint %v %v %v", sp, ok, err)
	}
}

func TestOrderPreservingEncoding(t *testing.T) {
	prev := EncodeOrderPreservingVarUint64(0)
	for _, n := range []uint64{1, 255, 256, 65535, 1 << 40, ^uint64(0)} {
		e := EncodeOrderPreservingVarUint64(n)
		if bytes.Compare(prev, e) >= 0 {
			t.Fatalf("order broken at %d", n)
		}
		d, k, err := DecodeOrderPreservingVarUint64(e)
		if err != nil || d != n || k != len(e) {
			t.Fatalf("roundtrip %d: %d %d %v", n, d, k, err)
		}
		prev = e
	}
}
