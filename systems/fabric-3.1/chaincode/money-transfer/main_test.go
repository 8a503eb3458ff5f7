package main

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/hyperledger/fabric-chaincode-go/v2/shim"
)

// fakeStub is a world state and the requests a chaincode sends the peer, as
// the shim sends them where the peer offers write batches and multiple-key
// reads (a v3.1.5 peer with its sample core.yaml): GetState and PutState one
// request each, GetMultipleStates one, the writes between StartWriteBatch and
// FinishWriteBatch one. The methods a transfer does not call are the nil
// interface's (they panic).
type fakeStub struct {
	shim.ChaincodeStubInterface
	args     [][]byte
	state    map[string][]byte
	writes   map[string][]byte
	batch    map[string][]byte
	requests []string
}

func newStub(state map[string][]byte, args ...string) *fakeStub {
	s := &fakeStub{state: state, writes: map[string][]byte{}}
	for _, a := range args {
		s.args = append(s.args, []byte(a))
	}
	return s
}

func (s *fakeStub) GetArgs() [][]byte { return s.args }

func (s *fakeStub) GetState(key string) ([]byte, error) {
	s.requests = append(s.requests, "GET_STATE")
	return s.state[key], nil
}

func (s *fakeStub) GetMultipleStates(keys ...string) ([][]byte, error) {
	s.requests = append(s.requests, "GET_STATE_MULTIPLE")
	out := make([][]byte, len(keys))
	for i, k := range keys {
		out[i] = s.state[k]
	}
	return out, nil
}

func (s *fakeStub) PutState(key string, value []byte) error {
	if s.batch != nil {
		s.batch[key] = value
		return nil
	}
	s.requests = append(s.requests, "PUT_STATE")
	s.writes[key] = value
	return nil
}

func (s *fakeStub) StartWriteBatch() {
	if s.batch == nil {
		s.batch = map[string][]byte{}
	}
}

func (s *fakeStub) FinishWriteBatch() error {
	if len(s.batch) > 0 {
		s.requests = append(s.requests, "WRITE_BATCH_STATE")
	}
	for k, v := range s.batch {
		s.writes[k] = v
	}
	s.batch = nil
	return nil
}

func accounts(balances map[string]int64) map[string][]byte {
	out := map[string][]byte{}
	for k, b := range balances {
		out[k] = account{balance: b, memo: []byte("memo-" + k)}.encode()
	}
	return out
}

// The batched transfer writes what the per-key one writes, on the same
// transfers, in two requests to the peer instead of four.
func TestBatchedWritesEqualPerKey(t *testing.T) {
	state := accounts(map[string]int64{"a": 100, "b": 5, "c": 0})
	for _, tr := range [][]string{{"a", "b", "7"}, {"b", "c", "5"}, {"a", "c", "100", "padding"}, {"c", "a", "0"}} {
		args := append([]string{funcTransfer}, tr...)
		perKey, batched := newStub(state, args...), newStub(state, args...)
		r1 := moneyTransfer{api: apiPerKey}.Invoke(perKey)
		r2 := moneyTransfer{api: apiBatched}.Invoke(batched)
		if r1.Status != shim.OK || r2.Status != shim.OK {
			t.Fatalf("transfer %v: per-key %d %q, batched %d %q", tr, r1.Status, r1.Message, r2.Status, r2.Message)
		}
		if !reflect.DeepEqual(perKey.writes, batched.writes) || len(perKey.writes) != 2 {
			t.Fatalf("transfer %v: per-key wrote %v, batched %v", tr, perKey.writes, batched.writes)
		}
		if got := strings.Join(perKey.requests, ","); got != "GET_STATE,GET_STATE,PUT_STATE,PUT_STATE" {
			t.Fatalf("per-key requests %s", got)
		}
		if got := strings.Join(batched.requests, ","); got != "GET_STATE_MULTIPLE,WRITE_BATCH_STATE" {
			t.Fatalf("batched requests %s", got)
		}
		from, _ := decode(batched.writes[tr[0]])
		to, _ := decode(batched.writes[tr[1]])
		was, _ := decode(state[tr[0]])
		if amount := fmt.Sprint(was.balance - from.balance); amount != tr[2] || string(to.memo) != "memo-"+tr[1] {
			t.Fatalf("transfer %v: moved %s, memo %q", tr, amount, to.memo)
		}
	}
}

// Negative controls: both APIs refuse an overdraft, a missing account and a
// bad amount, and write nothing.
func TestBothRefuseWrongTransfers(t *testing.T) {
	state := accounts(map[string]int64{"a": 10, "b": 0})
	for _, tr := range [][]string{{"a", "b", "11"}, {"a", "x", "1"}, {"x", "a", "1"}, {"a", "b", "-1"}, {"a", "a", "1"}, {"a", "b"}} {
		for _, api := range []string{apiPerKey, apiBatched} {
			stub := newStub(state, append([]string{funcTransfer}, tr...)...)
			if r := (moneyTransfer{api: api}).Invoke(stub); r.Status == shim.OK || len(stub.writes) != 0 {
				t.Fatalf("%s transfer %v accepted (status %d, writes %v)", api, tr, r.Status, stub.writes)
			}
		}
	}
	// a wrong balance is refused: the batched path checks the funds it read, not the amount asked
	stub := newStub(accounts(map[string]int64{"a": 3, "b": 0}), funcTransfer, "a", "b", "4")
	if r := (moneyTransfer{api: apiBatched}).Invoke(stub); !strings.Contains(r.Message, "insufficient funds") {
		t.Fatalf("overdraft: %d %q", r.Status, r.Message)
	}
}

func TestChaincodeAPI(t *testing.T) {
	for v, want := range map[string]string{"": apiPerKey, "per-key": apiPerKey, "batched": apiBatched} {
		if got, err := chaincodeAPI(v); err != nil || got != want {
			t.Fatalf("CHAINCODE_API=%q: %q, %v", v, got, err)
		}
	}
	for _, v := range []string{"compound", "Batched", "per_key"} {
		if _, err := chaincodeAPI(v); err == nil {
			t.Fatalf("CHAINCODE_API=%q accepted", v)
		}
	}
}
