// Command blockfile decodes the block files of a Fabric 1.x ledger (the
// blockfile_NNNNNN kept in a run's raw/<host>/blocks/; the reference build's
// files too), checks the chain they hold, and prints one CSV row per block:
//
//	block_number,tx_count,valid_count
//
// or, with --txs, one row per transaction:
//
//	block_number,tx_index,tx_id,validation_code
//
// where validation_code is the peer.TxValidationCode name (VALID,
// BAD_CREATOR_SIGNATURE, ENDORSEMENT_POLICY_FAILURE, MVCC_READ_CONFLICT, ...)
// read from the block's TRANSACTIONS_FILTER metadata; every transaction of a
// block without a filter (an orderer's block) is NOT_VALIDATED. tx_id is the
// channel header's transaction ID, empty where there is none (a config
// transaction without one).
//
// Usage: blockfile [--txs] FILE... (files of one ledger, in order). Exit 1
// when a file cannot be read, ends in a cut record (blockfile.ErrCutRecord) or
// the chain is broken, 2 on bad usage.
package main

import (
	"encoding/csv"
	"fmt"
	"io"
	"os"
	"strconv"

	"fabricrepro/internal/blockfile"
)

const usage = "usage: blockfile [--txs] FILE... (a Fabric ledger's blockfile_NNNNNN, in order)"

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

func run(args []string, stdout, stderr io.Writer) int {
	txs := false
	if len(args) > 0 && (args[0] == "--txs" || args[0] == "-txs") {
		txs, args = true, args[1:]
	}
	if len(args) < 1 {
		fmt.Fprintln(stderr, usage)
		return 2
	}
	blocks, err := blockfile.ReadFiles(args)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	if err := blockfile.Check(blocks); err != nil {
		fmt.Fprintln(stderr, "chain:", err)
		return 1
	}
	w := csv.NewWriter(stdout)
	if txs {
		_ = w.Write([]string{"block_number", "tx_index", "tx_id", "validation_code"})
		for _, b := range blocks {
			num := strconv.FormatUint(b.Header.Number, 10)
			for _, t := range blockfile.Txs(b) {
				_ = w.Write([]string{num, strconv.Itoa(t.Index), t.TxID, t.CodeName()})
			}
		}
	} else {
		_ = w.Write([]string{"block_number", "tx_count", "valid_count"})
		for _, b := range blocks {
			_ = w.Write([]string{strconv.FormatUint(b.Header.Number, 10), strconv.Itoa(len(b.Data.Data)),
				strconv.Itoa(blockfile.ValidCount(b))})
		}
	}
	w.Flush()
	if err := w.Error(); err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	return 0
}
