// Package nodecmd is the command skeleton shared by the reference orderer
// and peer:
//
//	NAME --config NAME.yaml
//
// Run parses the flags, loads the configuration (a configuration error is
// printed on stderr and exits 2, any other load error exits 1), builds the
// node (a failure logs "cannot start: ..." and exits 1), and serves it until
// SIGINT or SIGTERM, which logs "received SIGNAL, shutting down" and stops
// it. A serve error logs "serve: ..." and exits 1; a clean stop logs
// "stopped" and exits 0.
package nodecmd

import (
	"errors"
	"flag"
	"fmt"
	"log"
	"os"
	"os/signal"
	"syscall"

	"fabricrepro/internal/config"
)

// Node is a server that serves until stopped. Stop may be called more than
// once and returns only when the node has stopped.
type Node interface {
	Serve() error
	Stop()
}

// Run is the whole command for the node called name: args are the
// command line as in os.Args (args[0] names the program in the usage
// text). The config flag defaults to NAME.yaml, log lines carry the prefix
// "NAME ", load reads a configuration file and start builds the node from
// it. Run returns the process exit code; main passes it to os.Exit:
//
//	os.Exit(nodecmd.Run("peer", os.Args, peer.Load, peer.New))
func Run[C any, N Node](name string, args []string, load func(path string) (C, error), start func(C) (N, error)) int {
	fs := flag.NewFlagSet(args[0], flag.ContinueOnError)
	path := fs.String("config", name+".yaml", "configuration file (see "+name+".example.yaml)")
	// The flag package has printed the error and usage; these are the
	// exit codes of flag.ExitOnError.
	if err := fs.Parse(args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	log.SetFlags(log.LstdFlags | log.Lmicroseconds | log.LUTC)
	log.SetPrefix(name + " ")

	cfg, err := load(*path)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		var cerr *config.Error
		if errors.As(err, &cerr) {
			return 2
		}
		return 1
	}
	n, err := start(cfg)
	if err != nil {
		log.Printf("cannot start: %v", err)
		return 1
	}

	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(sigs)
	done := make(chan struct{})
	defer close(done)
	go func() {
		select {
		case s := <-sigs:
			log.Printf("received %s, shutting down", s)
			n.Stop()
		case <-done:
		}
	}()
	if err := n.Serve(); err != nil {
		log.Printf("serve: %v", err)
		n.Stop()
		return 1
	}
	n.Stop()
	log.Printf("stopped")
	return 0
}
