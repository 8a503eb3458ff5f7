package main

import (
	"testing"

	"fabricrepro/internal/chaincode"
	"fabricrepro/internal/committer/txgen"
	"fabricrepro/internal/endorser"
	"fabricrepro/internal/ledger/txsim"
	moneytransfer "fabricrepro/workloads/money-transfer"
)

// endorsingPeer is a one-organization network on channel "ch" (txgen's) and
// its peer's in-process endorser with money-transfer installed, over an
// in-memory state: the network (bundle, peer and client identities), the
// state and the endorser.
func endorsingPeer(t *testing.T) (*txgen.Network, *txsim.MemDB, *endorser.Endorser) {
	t.Helper()
	n, err := txgen.NewNetwork(t.TempDir(), "ch", 1)
	if err != nil {
		t.Fatal(err)
	}
	db := txsim.NewMemDB()
	reg := chaincode.NewRegistry()
	if err := reg.Register(moneytransfer.Name, moneytransfer.Chaincode{}); err != nil {
		t.Fatal(err)
	}
	en, err := endorser.New(endorser.Config{ChannelID: "ch", Bundle: n.Bundle, Signer: n.Peer, State: db, Chaincodes: reg})
	if err != nil {
		t.Fatal(err)
	}
	return n, db, en
}
