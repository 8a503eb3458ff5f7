package main

import (
	"testing"

	"github.com/hyperledger/fabric/core/chaincode/shim"
)

func balance(t *testing.T, stub *shim.MockStub, key string) string {
	value, err := stub.MockQuery("query", []string{key})
	if err != nil {
		t.Fatalf("query %s: %v", key, err)
	}
	return string(value)
}

// The revised transfer moves X from A to B through the patched MockStub's CR
// and DUS (the peer's own semantics, core/chaincode/stateops).
func TestTransfer(t *testing.T) {
	stub := shim.NewMockStub("transfer", new(Transfer))
	if _, err := stub.MockInit("init", "init", []string{"a", "100", "b", "200"}); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		if _, err := stub.MockInvoke("tx", "invoke", []string{"a", "b", "10"}); err != nil {
			t.Fatal(err)
		}
	}
	if a, b := balance(t, stub, "a"), balance(t, stub, "b"); a != "70" || b != "230" {
		t.Fatalf("a=%s b=%s, want 70 and 230", a, b)
	}
	// A missing account fails the whole CR: the debit of a is not written.
	if _, err := stub.MockInvoke("tx", "invoke", []string{"a", "nobody", "10"}); err == nil {
		t.Fatal("transfer to a missing account succeeded")
	}
	if a := balance(t, stub, "a"); a != "70" {
		t.Fatalf("a=%s after a failed transfer, want 70", a)
	}
	if _, err := stub.MockInvoke("tx", "invoke", []string{"a", "b", "ten"}); err == nil {
		t.Fatal("a non-integer amount was accepted")
	}
}
