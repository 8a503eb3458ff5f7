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
	"errors"
	"flag"
	"fmt"
	"log"
	"os"
	"os/signal"
	"syscall"

	"fabricrepro/internal/config"
	"fabricrepro/internal/peer"
)

func main() {
	path := flag.String("config", "peer.yaml", "configuration file (see peer.example.yaml)")
	flag.Parse()
	log.SetFlags(log.LstdFlags | log.Lmicroseconds | log.LUTC)
	log.SetPrefix("peer ")

	cfg, err := peer.Load(*path)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		var cerr *config.Error
		if errors.As(err, &cerr) {
			os.Exit(2)
		}
		os.Exit(1)
	}
	p, err := peer.New(cfg)
	if err != nil {
		log.Printf("cannot start: %v", err)
		os.Exit(1)
	}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		s := <-sigs
		log.Printf("received %s, shutting down", s)
		p.Stop()
	}()
	if err := p.Serve(); err != nil {
		log.Printf("serve: %v", err)
		p.Stop()
		os.Exit(1)
	}
	p.Stop()
	log.Printf("stopped")
}
