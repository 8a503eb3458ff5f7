// Command cryptogen writes a network's crypto material: per organization a CA
// and ECDSA P-256 X.509 certificates for its orderers, peers and clients, in
// the MSP directory layout of Fabric's own cryptogen (docs/interfaces.md).
package main

import (
	"flag"
	"fmt"
	"os"

	"fabricrepro/internal/msp"
)

func main() {
	out := flag.String("out", "crypto", "output directory")
	spec := msp.NetworkSpec{}
	flag.IntVar(&spec.OrdererOrgs, "orderer-orgs", 1, "orderer organizations")
	flag.IntVar(&spec.Orderers, "orderers", 1, "orderers per orderer organization")
	flag.IntVar(&spec.PeerOrgs, "peer-orgs", 1, "peer organizations")
	flag.IntVar(&spec.Peers, "peers", 1, "peers per peer organization")
	flag.IntVar(&spec.Clients, "clients", 1, "client users per peer organization")
	flag.Parse()
	if spec.OrdererOrgs < 1 || spec.PeerOrgs < 1 || spec.Orderers < 1 || spec.Peers < 0 || spec.Clients < 0 {
		fmt.Fprintln(os.Stderr, "cryptogen: need at least one orderer org with one orderer and one peer org")
		os.Exit(2)
	}
	if _, err := os.Stat(*out); err == nil {
		fmt.Fprintf(os.Stderr, "cryptogen: %s exists; refusing to overwrite crypto material\n", *out)
		os.Exit(2)
	}
	orgs, err := msp.Generate(*out, spec)
	if err != nil {
		fmt.Fprintln(os.Stderr, "cryptogen:", err)
		os.Exit(1)
	}
	for _, o := range orgs {
		fmt.Printf("%s\t%s\t%d identities\n", o.MSPID, o.Dir, len(o.Nodes))
	}
}
