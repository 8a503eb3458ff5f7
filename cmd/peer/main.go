// Command peer is the reference build's Fabric 1.2 peer:
//
//	peer --config peer.yaml
//
// In the committer role it pulls blocks from the orderer and commits them
// (block signature, validation with VSCC, MVCC, block/state/history
// commit), logging Fabric's "Committed block [N] ..." line and appending a
// CSV row per block; in the endorser role it serves
// Endorser.ProcessProposal. It always serves Deliver (full and filtered
// blocks) and Prometheus metrics, logs "Beginning to serve requests" when
// ready, and stops cleanly on SIGINT or SIGTERM. peer.example.yaml
// documents every configuration key.
package main

import (
	"fmt"
	"os"

	"fabricrepro/internal/chaincode"
	"fabricrepro/internal/nodecmd"
	"fabricrepro/internal/peer"
	moneytransfer "fabricrepro/workloads/money-transfer"
)

func main() {
	os.Exit(nodecmd.Run("peer", os.Args, peer.Load, start))
}

// start builds the peer with the chaincodes its endorser runs: the
// workloads' chaincodes are chosen here, so the peer package imports none.
func start(c peer.Config) (*peer.Peer, error) {
	reg := chaincode.NewRegistry()
	if err := reg.Register(moneytransfer.Name, moneytransfer.Chaincode{}); err != nil {
		return nil, fmt.Errorf("chaincode %s: %w", moneytransfer.Name, err)
	}
	return peer.New(c, reg)
}
