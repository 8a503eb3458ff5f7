package committer

import (
	"path/filepath"
	"testing"

	"fabricrepro/internal/committer/txgen"
	"fabricrepro/internal/ledger/statedb"
	"fabricrepro/internal/policy"
	"fabricrepro/internal/protos/ledger/rwset/kvrwset"
	"fabricrepro/internal/protoutil"
	"fabricrepro/internal/validation"
)

// A crash after the block store append but before the state commit: on
// reopen the block's writes must be applied from the stored block.
func TestRecoverLostStateCommit(t *testing.T) {
	dir := t.TempDir()
	n, err := txgen.NewNetwork(filepath.Join(dir, "crypto"), "mychannel", 1)
	if err != nil {
		t.Fatal(err)
	}
	l, err := OpenLedger(filepath.Join(dir, "ledger"), Config{}, n.Bundle, n.Genesis, LedgerOptions{NoSync: true, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	txgen.Deploy(l.State, "mt", "1", policy.SignedByAnyMember("Org1MSP"))
	env, _, _ := txgen.Endorse(n.Channel, txgen.Tx{Chaincode: "mt", Version: "1", Args: [][]byte{[]byte("x")},
		Results: txgen.Results(txgen.NsRW{Namespace: "mt", Writes: []*kvrwset.KVWrite{txgen.Write("k", []byte("v"))}}),
		Client:  n.Client, Endorsers: []protoutil.Signer{n.Peer}})
	b1, _ := n.Block(1, l.Store.LastBlockHash(), [][]byte{protoutil.MarshalOrPanic(env)})
	setFilter(b1, validation.TxFilter{0})
	if err := l.Store.AddBlock(b1); err != nil { // the state commit never happens
		t.Fatal(err)
	}
	l.Close()
	l, err = OpenLedger(filepath.Join(dir, "ledger"), Config{}, n.Bundle, n.Genesis, LedgerOptions{NoSync: true, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	v, _ := l.State.GetState("mt", "k")
	if v == nil || string(v.Value) != "v" || v.Version != (statedb.Height{BlockNum: 1}) {
		t.Fatalf("k after recovery: %+v", v)
	}
	if sp, _, _ := l.State.Savepoint(); sp.BlockNum != 1 {
		t.Fatalf("savepoint %v", sp)
	}
}
