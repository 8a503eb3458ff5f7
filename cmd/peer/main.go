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
	"os"

	"fabricrepro/internal/nodecmd"
	"fabricrepro/internal/peer"
)

func main() {
	os.Exit(nodecmd.Run("peer", os.Args, peer.Load, peer.New))
}
