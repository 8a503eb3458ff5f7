package main

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/hyperledger/fabric/core/chaincode/shim"
)

// This test runs in GOPATH mode against Fabric 1.2's shim (tests/upstream/
// test_fabric_network.py runs it with the upstream build's GOPATH); the
// repository's own module skips this directory.

func args(s ...string) [][]byte {
	out := make([][]byte, len(s))
	for i, a := range s {
		out[i] = []byte(a)
	}
	return out
}

// value is the reference chaincode's encoding: 8-byte big-endian balance, then the memo.
func value(balance int64, memo string) []byte {
	b := make([]byte, 8)
	binary.BigEndian.PutUint64(b, uint64(balance))
	return append(b, memo...)
}

func TestMoneyTransferAsTheReferenceChaincode(t *testing.T) {
	stub := shim.NewMockStub("money-transfer", moneyTransfer{})
	if r := stub.MockInit("init", nil); r.Status != shim.OK {
		t.Fatalf("init: %s", r.Message)
	}
	for _, c := range [][][]byte{args("create", "alice", "100", "pad"), args("create", "bob", "50")} {
		if r := stub.MockInvoke("c", c); r.Status != shim.OK {
			t.Fatalf("%s: %s", c, r.Message)
		}
	}
	pad := string(bytes.Repeat([]byte{'x'}, 2900))
	if r := stub.MockInvoke("t", args("transfer", "alice", "bob", "30", pad)); r.Status != shim.OK {
		t.Fatalf("transfer: %s", r.Message)
	}
	if got := stub.State["alice"]; !bytes.Equal(got, value(70, "pad")) {
		t.Fatalf("alice = %x: the memo stays, the transfer's padding is not stored", got)
	}
	if got := stub.State["bob"]; !bytes.Equal(got, value(80, "")) {
		t.Fatalf("bob = %x", got)
	}
	if r := stub.MockInvoke("b", args("balance", "bob")); r.Status != shim.OK || string(r.Payload) != "80" {
		t.Fatalf("balance: %d %q %s", r.Status, r.Payload, r.Message)
	}
	for _, bad := range []struct {
		args [][]byte
		msg  string
	}{
		{args("create", "alice", "1"), `create: account "alice" already exists`},
		{args("create", "carol", "-1"), `create: bad initial balance "-1"`},
		{args("transfer", "alice", "alice", "1"), `transfer: source and destination are both "alice"`},
		{args("transfer", "alice", "carol", "1"), `transfer: account "carol" does not exist`},
		{args("transfer", "alice", "bob", "71"), `transfer: insufficient funds in "alice": 70 < 71`},
		{args("transfer", "alice", "bob", "-1"), `transfer: bad amount "-1"`},
		{args("transfer", "alice", "bob"), `transfer takes from, to, amount[, padding]; got 2 arguments`},
		{args("nope"), `money-transfer: unknown function "nope"`},
		{nil, `money-transfer: no function given`},
	} {
		if r := stub.MockInvoke("x", bad.args); r.Status != shim.ERROR || r.Message != bad.msg {
			t.Errorf("%q: status %d message %q, want %q", bad.args, r.Status, r.Message, bad.msg)
		}
	}
}
