package txsim

import (
	"bytes"
	"testing"

	"fabricrepro/internal/ledger/statedb"
)

func seed(t *testing.T) *MemDB {
	t.Helper()
	db := NewMemDB()
	b := &statedb.UpdateBatch{}
	b.Put("cc", "a", []byte("A"), statedb.Height{BlockNum: 3, TxNum: 1})
	b.Put("cc", "b", []byte("B"), statedb.Height{BlockNum: 5, TxNum: 0})
	b.Put("other", "x", []byte("X"), statedb.Height{BlockNum: 2, TxNum: 7})
	if err := db.ApplyUpdates(b, statedb.Height{BlockNum: 5}); err != nil {
		t.Fatal(err)
	}
	return db
}

func TestReadsRecordCommittedVersions(t *testing.T) {
	s := New(seed(t))
	v, err := s.GetState("cc", "b")
	if err != nil || string(v) != "B" {
		t.Fatalf("GetState b = %q, %v", v, err)
	}
	if v, _ := s.GetState("cc", "missing"); v != nil {
		t.Fatalf("missing key returned %q", v)
	}
	if _, err := s.GetState("cc", "a"); err != nil {
		t.Fatal(err)
	}
	sets, order, err := ParseResults(mustResults(t, s))
	if err != nil {
		t.Fatal(err)
	}
	if len(order) != 1 || order[0] != "cc" {
		t.Fatalf("namespaces = %v", order)
	}
	r := sets["cc"].Reads
	if len(r) != 3 || r[0].Key != "a" || r[1].Key != "b" || r[2].Key != "missing" {
		t.Fatalf("reads not sorted by key: %v", r)
	}
	if r[0].Version.BlockNum != 3 || r[0].Version.TxNum != 1 || r[1].Version.BlockNum != 5 {
		t.Fatalf("wrong versions: %v", r)
	}
	if r[2].Version != nil {
		t.Fatalf("absent key must have nil version, got %v", r[2].Version)
	}
	if len(sets["cc"].Writes) != 0 {
		t.Fatalf("unexpected writes")
	}
}

func TestReadYourWrites(t *testing.T) {
	s := New(seed(t))
	if err := s.SetState("cc", "a", []byte("new")); err != nil {
		t.Fatal(err)
	}
	v, _ := s.GetState("cc", "a")
	if string(v) != "new" {
		t.Fatalf("read after write = %q", v)
	}
	if err := s.DeleteState("cc", "b"); err != nil {
		t.Fatal(err)
	}
	if v, _ := s.GetState("cc", "b"); v != nil {
		t.Fatalf("read after delete = %q", v)
	}
	sets, _, err := ParseResults(mustResults(t, s))
	if err != nil {
		t.Fatal(err)
	}
	kv := sets["cc"]
	if len(kv.Reads) != 0 {
		t.Fatalf("reads served from own writes must not be recorded: %v", kv.Reads)
	}
	if len(kv.Writes) != 2 || kv.Writes[0].Key != "a" || string(kv.Writes[0].Value) != "new" || !kv.Writes[1].IsDelete {
		t.Fatalf("writes = %v", kv.Writes)
	}
}

func TestReadThenWriteKeepsReadVersion(t *testing.T) {
	s := New(seed(t))
	s.GetState("cc", "a")
	s.SetState("cc", "a", []byte("A2"))
	s.GetState("cc", "a")
	sets, _, _ := ParseResults(mustResults(t, s))
	if r := sets["cc"].Reads; len(r) != 1 || r[0].Version.BlockNum != 3 {
		t.Fatalf("reads = %v", r)
	}
}

func TestDeterministicSortedOutput(t *testing.T) {
	run := func(order []string) []byte {
		s := New(seed(t))
		for _, k := range order {
			s.GetState("cc", k)
			s.SetState("cc", k, []byte("v"+k))
		}
		s.GetState("other", "x")
		s.SetState("zeta", "k", []byte("z"))
		return mustResults(t, s)
	}
	a := run([]string{"b", "a", "c", "missing"})
	b := run([]string{"missing", "c", "a", "b"})
	if !bytes.Equal(a, b) {
		t.Fatal("results depend on access order")
	}
	sets, order, _ := ParseResults(a)
	if len(order) != 3 || order[0] != "cc" || order[1] != "other" || order[2] != "zeta" {
		t.Fatalf("namespaces not sorted: %v", order)
	}
	w := sets["cc"].Writes
	for i := 1; i < len(w); i++ {
		if w[i-1].Key >= w[i].Key {
			t.Fatalf("writes not sorted: %v", w)
		}
	}
}

func TestUseAfterResults(t *testing.T) {
	s := New(seed(t))
	mustResults(t, s)
	if _, err := s.GetState("cc", "a"); err != ErrDone {
		t.Fatalf("GetState after results: %v", err)
	}
	if err := s.SetState("cc", "a", nil); err != ErrDone {
		t.Fatalf("SetState after results: %v", err)
	}
}

func mustResults(t *testing.T, s *Simulator) []byte {
	t.Helper()
	raw, err := s.GetTxSimulationResults()
	if err != nil {
		t.Fatal(err)
	}
	return raw
}
