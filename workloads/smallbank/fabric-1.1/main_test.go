package main

import (
	"encoding/json"
	"testing"

	"github.com/hyperledger/fabric/core/chaincode/shim"
)

func call(t *testing.T, stub *shim.MockStub, ok bool, args ...string) []byte {
	t.Helper()
	raw := make([][]byte, len(args))
	for i, a := range args {
		raw[i] = []byte(a)
	}
	res := stub.MockInvoke("tx", raw)
	if (res.Status == shim.OK) != ok {
		t.Fatalf("%v: status %d %s", args, res.Status, res.Message)
	}
	return res.Payload
}

func account(t *testing.T, stub *shim.MockStub, id string) Account {
	t.Helper()
	var a Account
	if err := json.Unmarshal(call(t, stub, true, "query", id), &a); err != nil {
		t.Fatal(err)
	}
	return a
}

// TestOperations runs every operation and checks the balances and the key
// layout of Caliper's smallbank chaincode.
func TestOperations(t *testing.T) {
	stub := shim.NewMockStub("smallbank", Smallbank{})
	call(t, stub, true, "create_account", "1", "a", "100", "50")
	call(t, stub, true, "create_account", "2", "b", "10", "20")
	call(t, stub, false, "create_account", "1", "a", "1", "1")
	call(t, stub, true, "deposit_checking", "5", "1")
	call(t, stub, true, "write_check", "3", "2")
	call(t, stub, true, "transact_savings", "7", "1")
	call(t, stub, true, "send_payment", "30", "2", "1")
	call(t, stub, true, "amalgamate", "1", "2")
	call(t, stub, false, "send_payment", "1", "2", "9")
	call(t, stub, false, "deposit_checking", "1")
	call(t, stub, false, "no_such_function", "1")
	// 1: checking 100+5-30 = 75, then +20 (2's savings) = 95; savings 50+7 = 57.
	// 2: checking 10-3+30 = 37; savings 20 -> 0.
	if a := account(t, stub, "1"); a != (Account{"1", "a", 57, 95}) {
		t.Errorf("account 1: %+v", a)
	}
	if a := account(t, stub, "2"); a != (Account{"2", "b", 0, 37}) {
		t.Errorf("account 2: %+v", a)
	}
	// Caliper's layout: sha512hex("smallbank")[:6] (332514) + sha512hex(id)[:64].
	if k := AccountKey("1"); len(k) != 70 || k[:6] != "332514" || stub.State[k] == nil {
		t.Errorf("key %q not the stored one", k)
	}
}
