package committer

import (
	"bytes"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"fabricrepro/internal/committer/txgen"
	"fabricrepro/internal/ledger/statedb"
	"fabricrepro/internal/lscc"
	"fabricrepro/internal/policy"
	cb "fabricrepro/internal/protos/common"
	"fabricrepro/internal/protos/ledger/rwset/kvrwset"
	pb "fabricrepro/internal/protos/peer"
	"fabricrepro/internal/protoutil"
)

func TestPipelineDeployTransferRestart(t *testing.T) {
	dir := t.TempDir()
	n, err := txgen.NewNetwork(filepath.Join(dir, "crypto"), "mychannel", 1)
	if err != nil {
		t.Fatal(err)
	}
	var csv bytes.Buffer
	var logs []string
	logf := func(f string, a ...any) { logs = append(logs, f) }
	l, err := OpenLedger(filepath.Join(dir, "ledger"), Config{VSCCWorkers: 2}, n.Bundle, n.Genesis,
		LedgerOptions{BlockLog: NewBlockLog(&csv), Logf: logf, NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	if l.Store.Height() != 1 {
		t.Fatalf("height %d after genesis", l.Store.Height())
	}
	// Block 1: deploy the chaincode through lscc.
	cd := &lscc.ChaincodeData{Name: "mt", Version: "1", Escc: "escc", Vscc: "vscc", Policy: protoutil.MarshalOrPanic(policy.SignedByAnyMember("Org1MSP"))}
	env, _, err := txgen.Endorse(n.Channel, txgen.Tx{Chaincode: "lscc", Version: "1", Args: [][]byte{[]byte("deploy")},
		Results: txgen.Results(txgen.NsRW{Namespace: "lscc", Reads: []*kvrwset.KVRead{txgen.Read("mt", nil)}, Writes: []*kvrwset.KVWrite{txgen.Write("mt", cd.Marshal())}}),
		Client:  n.Client, Endorsers: []protoutil.Signer{n.Peer}})
	if err != nil {
		t.Fatal(err)
	}
	prev := l.Store.LastBlockHash()
	b1, _ := n.Block(1, prev, [][]byte{protoutil.MarshalOrPanic(env)})
	st, err := l.Committer.Commit(b1)
	if err != nil || st.ValidCount != 1 {
		t.Fatalf("deploy block: %+v %v", st, err)
	}
	// Block 2: two creates.
	mk := func(key string, v *statedb.Height) []byte {
		env, _, err := txgen.Endorse(n.Channel, txgen.Tx{Chaincode: "mt", Version: "1", Args: [][]byte{[]byte("create")},
			Results: txgen.Results(txgen.NsRW{Namespace: "mt", Reads: []*kvrwset.KVRead{txgen.Read(key, v)}, Writes: []*kvrwset.KVWrite{txgen.Write(key, []byte("100"))}}),
			Client:  n.Client, Endorsers: []protoutil.Signer{n.Peer}})
		if err != nil {
			t.Fatal(err)
		}
		return protoutil.MarshalOrPanic(env)
	}
	b2, _ := n.Block(2, protoutil.BlockHeaderHash(b1.Header), [][]byte{mk("a", nil), mk("b", nil), mk("a", nil)})
	st, err = l.Committer.Commit(b2)
	if err != nil || st.ValidCount != 2 || st.Filter.Code(2) != pb.TxValidationCode_MVCC_READ_CONFLICT {
		t.Fatalf("block 2: %+v %v", st, err)
	}
	// A block signed by a peer is rejected and nothing changes.
	b3, _ := n.Block(3, protoutil.BlockHeaderHash(b2.Header), [][]byte{mk("c", nil)})
	protoutil.SignBlock(b3, n.Peer, nil)
	if _, err := l.Committer.Commit(b3); !errors.Is(err, ErrBadBlock) {
		t.Fatalf("badly signed block: %v", err)
	}
	if l.Store.Height() != 3 {
		t.Fatalf("height %d", l.Store.Height())
	}
	stored, _ := l.Store.BlockByNumber(2)
	if f := stored.Metadata.Metadata[cb.BlockMetadataIndex_TRANSACTIONS_FILTER]; len(f) != 3 || f[2] != byte(pb.TxValidationCode_MVCC_READ_CONFLICT) {
		t.Fatalf("stored filter %v", f)
	}
	if hs, _ := l.History.KeyHistory("mt", "a"); len(hs) != 1 || hs[0] != (statedb.Height{BlockNum: 2}) {
		t.Fatalf("history of a: %v", hs)
	}
	l.Close()

	// Restart: everything is still there and the chain continues.
	l, err = OpenLedger(filepath.Join(dir, "ledger"), Config{}, n.Bundle, n.Genesis, LedgerOptions{Logf: logf, NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if v, _ := l.State.GetState("mt", "b"); v == nil || v.Version != (statedb.Height{BlockNum: 2, TxNum: 1}) {
		t.Fatalf("b after restart: %+v", v)
	}
	b3, _ = n.Block(3, protoutil.BlockHeaderHash(b2.Header), [][]byte{mk("c", nil), mk("a", &statedb.Height{BlockNum: 2})})
	if st, err := l.Committer.Commit(b3); err != nil || st.ValidCount != 2 {
		t.Fatalf("block 3 after restart: %+v %v", st, err)
	}
	rows := strings.Split(strings.TrimSpace(csv.String()), "\n")
	if rows[0] != BlockLogHeader || len(rows) != 3 || !strings.HasPrefix(rows[2], "2,3,2,") {
		t.Fatalf("csv:\n%s", csv.String())
	}
	found := false
	for _, s := range logs {
		if strings.Contains(s, "Committed block [%d] with %d transaction(s) in %dms (state_validation=%dms block_commit=%dms state_commit=%dms)") {
			found = true
		}
	}
	if !found {
		t.Fatal("no Fabric commit log line")
	}
}
