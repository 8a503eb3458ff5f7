package moneytransfer

import (
	"bytes"
	"testing"

	"fabricrepro/internal/chaincode"
	"fabricrepro/internal/ledger/statedb"
	"fabricrepro/internal/ledger/txsim"
)

// commit simulates one invocation and applies its writes to db at height h.
func invoke(t *testing.T, db *txsim.MemDB, h uint64, args [][]byte) (chaincode.Response, *txsim.Simulator) {
	t.Helper()
	sim := txsim.New(db)
	resp := Chaincode{}.Invoke(chaincode.NewStub("ch", "tx", Name, args, sim))
	return resp, sim
}

func commit(t *testing.T, db *txsim.MemDB, h uint64, sim *txsim.Simulator) {
	t.Helper()
	raw, err := sim.GetTxSimulationResults()
	if err != nil {
		t.Fatal(err)
	}
	sets, _, err := txsim.ParseResults(raw)
	if err != nil {
		t.Fatal(err)
	}
	b := &statedb.UpdateBatch{}
	for ns, kv := range sets {
		for _, w := range kv.Writes {
			b.Put(ns, w.Key, w.Value, statedb.Height{BlockNum: h})
		}
	}
	if err := db.ApplyUpdates(b, statedb.Height{BlockNum: h}); err != nil {
		t.Fatal(err)
	}
}

func balanceOf(t *testing.T, db *txsim.MemDB, acct string) string {
	t.Helper()
	resp, _ := invoke(t, db, 0, [][]byte{[]byte(FuncBalance), []byte(acct)})
	if resp.Status != chaincode.OK {
		t.Fatalf("balance %s: %s", acct, resp.Message)
	}
	return string(resp.Payload)
}

func TestTransfer(t *testing.T) {
	db := txsim.NewMemDB()
	for i, a := range []string{"alice", "bob"} {
		resp, sim := invoke(t, db, 0, CreateArgs(a, 100, []byte("pad")))
		if resp.Status != chaincode.OK {
			t.Fatalf("create: %s", resp.Message)
		}
		commit(t, db, uint64(i+1), sim)
	}
	pad := bytes.Repeat([]byte{'x'}, 2900)
	resp, sim := invoke(t, db, 0, TransferArgs("alice", "bob", 30, pad))
	if resp.Status != chaincode.OK {
		t.Fatalf("transfer: %s", resp.Message)
	}
	raw, _ := sim.GetTxSimulationResults()
	sets, _, _ := txsim.ParseResults(raw)
	kv := sets[Name]
	if len(kv.Reads) != 2 || len(kv.Writes) != 2 || kv.Reads[0].Key != "alice" || kv.Reads[1].Key != "bob" {
		t.Fatalf("transfer must read and write two keys: %v", kv)
	}
	if kv.Reads[0].Version.BlockNum != 1 || kv.Reads[1].Version.BlockNum != 2 {
		t.Fatalf("read versions: %v", kv.Reads)
	}
	dst, _ := Decode(kv.Writes[1].Value)
	if dst.Balance != 130 || bytes.Contains(dst.Memo, pad) {
		t.Fatalf("destination value: balance %d memo %d bytes", dst.Balance, len(dst.Memo))
	}
	// Apply and check balances.
	b := &statedb.UpdateBatch{}
	for _, w := range kv.Writes {
		b.Put(Name, w.Key, w.Value, statedb.Height{BlockNum: 3})
	}
	db.ApplyUpdates(b, statedb.Height{BlockNum: 3})
	if a, b := balanceOf(t, db, "alice"), balanceOf(t, db, "bob"); a != "70" || b != "130" {
		t.Fatalf("balances alice=%s bob=%s", a, b)
	}
}

func TestTransferErrors(t *testing.T) {
	db := txsim.NewMemDB()
	resp, sim := invoke(t, db, 0, CreateArgs("alice", 10, nil))
	commit(t, db, 1, sim)
	if resp.Status != chaincode.OK {
		t.Fatal(resp.Message)
	}
	for name, args := range map[string][][]byte{
		"insufficient": TransferArgs("alice", "alice2", 5, nil),
		"missing dst":  TransferArgs("alice", "nobody", 5, nil),
		"overdraft":    TransferArgs("alice", "alice", 5, nil),
		"bad amount":   {[]byte(FuncTransfer), []byte("alice"), []byte("x"), []byte("-1")},
		"unknown fn":   {[]byte("steal")},
		"no args":      nil,
		"dup create":   CreateArgs("alice", 1, nil),
	} {
		if resp, _ := invoke(t, db, 0, args); resp.Status < chaincode.ErrorThreshold {
			t.Errorf("%s: status %d, want an error", name, resp.Status)
		}
	}
	resp, sim = invoke(t, db, 0, CreateArgs("bob", 0, nil))
	commit(t, db, 2, sim)
	if resp, _ := invoke(t, db, 0, TransferArgs("alice", "bob", 11, nil)); resp.Status != chaincode.Error {
		t.Errorf("overdraft: status %d", resp.Status)
	}
}

func TestEncodeDecode(t *testing.T) {
	a := Account{Balance: -5, Memo: []byte("m")}
	b, err := Decode(a.Encode())
	if err != nil || b.Balance != -5 || string(b.Memo) != "m" {
		t.Fatalf("round trip: %+v %v", b, err)
	}
	if _, err := Decode([]byte{1}); err == nil {
		t.Fatal("short value accepted")
	}
}
