// Command orderer is the reference build's Fabric 1.2 ordering service:
//
//	orderer --config orderer.yaml
//
// It serves AtomicBroadcast (Broadcast, Deliver) for the channel of its
// genesis block with the solo consenter, exposes Prometheus metrics, logs
// "Beginning to serve requests" when ready, and stops cleanly on SIGINT or
// SIGTERM. orderer.example.yaml documents every configuration key.
package main

import (
	"os"

	"fabricrepro/internal/nodecmd"
	"fabricrepro/internal/orderer/server"
)

func main() {
	os.Exit(nodecmd.Run("orderer", os.Args, server.Load, server.New))
}
