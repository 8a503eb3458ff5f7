package chaincode

import (
	"errors"
	"testing"
)

type memState map[string][]byte

func (m memState) GetState(ns, key string) ([]byte, error) { return m[ns+"/"+key], nil }
func (m memState) SetState(ns, key string, v []byte) error { m[ns+"/"+key] = v; return nil }
func (m memState) DeleteState(ns, key string) error        { delete(m, ns+"/"+key); return nil }

func TestStubScopesToNamespace(t *testing.T) {
	st := memState{}
	s := NewStub("ch", "tx1", "cc", [][]byte{[]byte("fn"), []byte("a"), []byte("b")}, st)
	fn, params := s.GetFunctionAndParameters()
	if fn != "fn" || len(params) != 2 || params[1] != "b" || s.GetTxID() != "tx1" || s.GetChannelID() != "ch" {
		t.Fatalf("args: %s %v", fn, params)
	}
	if err := s.PutState("k", []byte("v")); err != nil {
		t.Fatal(err)
	}
	if string(st["cc/k"]) != "v" {
		t.Fatalf("write not in own namespace: %v", st)
	}
	if err := s.PutState("", nil); err == nil {
		t.Fatal("empty key accepted")
	}
	if _, err := s.GetState(string([]byte{0xff})); err == nil {
		t.Fatal("invalid UTF-8 key accepted")
	}
	if err := s.DelState("k"); err != nil || st["cc/k"] != nil {
		t.Fatal("delete failed")
	}
	if fn, p := NewStub("", "", "cc", nil, st).GetFunctionAndParameters(); fn != "" || p != nil {
		t.Fatal("no args must give empty function")
	}
}

type nop struct{}

func (nop) Init(Stub) Response   { return Success(nil) }
func (nop) Invoke(Stub) Response { return Errorf("no %s", "way") }

func TestRegistry(t *testing.T) {
	r := NewRegistry()
	if err := r.Register("a", nop{}); err != nil {
		t.Fatal(err)
	}
	if err := r.RegisterSystem("lscc", nop{}); err != nil {
		t.Fatal(err)
	}
	if err := r.Register("a", nop{}); err == nil {
		t.Fatal("duplicate accepted")
	}
	if err := r.Register("", nop{}); err == nil {
		t.Fatal("empty name accepted")
	}
	if _, sys, ok := r.Lookup("lscc"); !ok || !sys {
		t.Fatal("lscc not system")
	}
	if _, sys, ok := r.Lookup("a"); !ok || sys {
		t.Fatal("a wrong")
	}
	if _, _, ok := r.Lookup("b"); ok {
		t.Fatal("b found")
	}
	if n := r.Names(); len(n) != 2 || n[0] != "a" {
		t.Fatalf("names %v", n)
	}
	if resp := (nop{}).Invoke(nil); resp.Status != Error || resp.Message != "no way" {
		t.Fatalf("Errorf: %+v", resp)
	}
	_ = errors.New
}
