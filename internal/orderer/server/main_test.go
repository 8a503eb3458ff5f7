package server

import (
	"flag"
	"io"
	"log"
	"os"
	"testing"
)

// TestMain keeps the orderer's log lines out of test and benchmark output
// unless -v is given.
func TestMain(m *testing.M) {
	flag.Parse()
	if !testing.Verbose() {
		log.SetOutput(io.Discard)
	}
	os.Exit(m.Run())
}
