package main

import (
	"errors"
	"io"
	"testing"

	"fabricrepro/internal/chaincode"
	"fabricrepro/internal/committer/txgen"
	"fabricrepro/internal/endorser"
	"fabricrepro/internal/ledger/txsim"
	cb "fabricrepro/internal/protos/common"
	ab "fabricrepro/internal/protos/orderer"
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

// answerBroadcasts is the loop of the test orderers' Broadcast: each envelope
// gets the status answer gives it, until the client closes the stream or
// answer says the stream ends after this reply (as an orderer ends a stream
// after a refusal).
func answerBroadcasts(st ab.AtomicBroadcast_BroadcastServer, answer func(*cb.Envelope) (status cb.Status, last bool)) error {
	for {
		env, err := st.Recv()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		status, last := answer(env)
		if err := st.Send(&ab.BroadcastResponse{Status: status}); err != nil || last {
			return err
		}
	}
}
