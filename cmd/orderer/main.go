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
	"errors"
	"flag"
	"fmt"
	"log"
	"os"
	"os/signal"
	"syscall"

	"fabricrepro/internal/config"
	"fabricrepro/internal/orderer/server"
)

func main() {
	path := flag.String("config", "orderer.yaml", "configuration file (see orderer.example.yaml)")
	flag.Parse()
	log.SetFlags(log.LstdFlags | log.Lmicroseconds | log.LUTC)
	log.SetPrefix("orderer ")

	cfg, err := server.Load(*path)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		var cerr *config.Error
		if errors.As(err, &cerr) {
			os.Exit(2)
		}
		os.Exit(1)
	}
	o, err := server.New(cfg)
	if err != nil {
		log.Printf("cannot start: %v", err)
		os.Exit(1)
	}

	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		s := <-sigs
		log.Printf("received %s, shutting down", s)
		o.Stop()
	}()
	if err := o.Serve(); err != nil {
		log.Printf("serve: %v", err)
		o.Stop()
		os.Exit(1)
	}
	o.Stop()
	log.Printf("stopped")
}
