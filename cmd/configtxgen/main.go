// Command configtxgen writes a channel's genesis block from the crypto
// material cryptogen produced: each organization's MSP, the channel policies
// and the orderer's batch parameters.
package main

import (
	"flag"
	"fmt"
	"os"

	"fabricrepro/internal/channelconfig"
	"fabricrepro/internal/protoutil"
)

func main() {
	cryptoDir := flag.String("crypto", "crypto", "crypto material directory (from cryptogen)")
	channel := flag.String("channel", "mychannel", "channel ID")
	out := flag.String("out", "genesis.block", "output file")
	b := channelconfig.DefaultBatch
	maxCount := flag.Uint("batch-size", uint(b.MaxMessageCount), "BatchSize.MaxMessageCount")
	absMax := flag.Uint("absolute-max-bytes", uint(b.AbsoluteMaxBytes), "BatchSize.AbsoluteMaxBytes")
	prefMax := flag.Uint("preferred-max-bytes", uint(b.PreferredMaxBytes), "BatchSize.PreferredMaxBytes")
	flag.DurationVar(&b.Timeout, "batch-timeout", b.Timeout, "BatchTimeout")
	flag.StringVar(&b.ConsensusType, "consensus", b.ConsensusType, "ConsensusType (solo)")
	flag.Parse()
	b.MaxMessageCount, b.AbsoluteMaxBytes, b.PreferredMaxBytes = uint32(*maxCount), uint32(*absMax), uint32(*prefMax)
	if b.MaxMessageCount == 0 || b.PreferredMaxBytes == 0 || b.PreferredMaxBytes > b.AbsoluteMaxBytes {
		fmt.Fprintln(os.Stderr, "configtxgen: need batch-size > 0 and 0 < preferred-max-bytes <= absolute-max-bytes")
		os.Exit(2)
	}
	orgs, err := channelconfig.OrgsFromCryptoDir(*cryptoDir)
	if err != nil {
		fmt.Fprintln(os.Stderr, "configtxgen:", err)
		os.Exit(1)
	}
	block, err := channelconfig.GenesisBlock(*channel, orgs, b)
	if err != nil {
		fmt.Fprintln(os.Stderr, "configtxgen:", err)
		os.Exit(1)
	}
	if err := os.WriteFile(*out, protoutil.MarshalOrPanic(block), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "configtxgen:", err)
		os.Exit(1)
	}
	fmt.Printf("wrote genesis block of channel %s with %d organizations to %s\n", *channel, len(orgs), *out)
}
