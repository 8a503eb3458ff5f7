// Command blockfile decodes the block files of a Fabric 1.x ledger (the
// blockfile_NNNNNN kept in a run's raw/<host>/blocks/), checks the chain
// they hold, and prints one CSV row per block:
//
//	block_number,tx_count,valid_count
//
// Usage: blockfile FILE... (files of one ledger, in order). Exit 1 when a
// file cannot be read or the chain is broken.
package main

import (
	"encoding/csv"
	"fmt"
	"os"
	"strconv"

	"fabricrepro/internal/blockfile"
	cb "fabricrepro/internal/protos/common"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: blockfile FILE... (a Fabric ledger's blockfile_NNNNNN, in order)")
		os.Exit(2)
	}
	var blocks []*cb.Block
	for _, path := range os.Args[1:] {
		f, err := os.Open(path)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		bs, err := blockfile.Read(f)
		f.Close()
		if err != nil {
			fmt.Fprintf(os.Stderr, "%s: %v\n", path, err)
			os.Exit(1)
		}
		blocks = append(blocks, bs...)
	}
	if err := blockfile.Check(blocks); err != nil {
		fmt.Fprintln(os.Stderr, "chain:", err)
		os.Exit(1)
	}
	w := csv.NewWriter(os.Stdout)
	_ = w.Write([]string{"block_number", "tx_count", "valid_count"})
	for _, b := range blocks {
		_ = w.Write([]string{strconv.FormatUint(b.Header.Number, 10), strconv.Itoa(len(b.Data.Data)),
			strconv.Itoa(blockfile.ValidCount(b))})
	}
	w.Flush()
}
