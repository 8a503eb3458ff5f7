// Command txverify re-derives each transaction's validation code from the
// block files of one Fabric ledger (the blockfile_NNNNNN a run keeps in
// raw/<host>/blocks/, or the reference build's, as cmd/blockfile reads them)
// with this repository's own model of Fabric 1.2's committer, or of Fabric
// v2.x/v3.x's (--rules; internal/txverify/v2.go), independent of the upstream
// code (package internal/txverify says what is checked and how), and prints it
// beside the code the ledger recorded:
//
//	txverify [--rules auto|v1|v2] [--policy P] [--msp-dir DIR]... [--sample F --seed S] [--prestate auto|empty] FILE...
//
// FILE... are the ledger's block files in order. stdout is CSV, one row per
// checked transaction:
//
//	block_number,tx_index,tx_id,recorded_code,derived_code
//
// recorded_code is the TxValidationCode name (VALID, BAD_CREATOR_SIGNATURE,
// ENDORSEMENT_POLICY_FAILURE, MVCC_READ_CONFLICT, DUPLICATE_TXID, ...) in the
// block's TRANSACTIONS_FILTER, NOT_VALIDATED where the block has none;
// derived_code is the one txverify computes. Each disagreement is also
// described on stderr (with the check's reason), and stderr's last line is
// one JSON object:
//
//	{"txs": total, "checked": n, "agree": a, "disagree": d, "seconds": wall, "source": "...", ...}
//
// source says where the MSPs came from (the ledger's config block, or
// --msp-dir); further keys name the channel, the MSP IDs, where the
// endorsement policies came from and how many keys were taken as pre-loaded.
//
// Options:
//
//	--rules R      the committer modelled: v1 (Fabric 1.2), v2 (Fabric v2.x
//	               and v3.x: the _lifecycle namespace and implicit org
//	               collections, v2's dispatcher and state-based endorsement,
//	               v2's MVCC over public and hashed reads, and every block's
//	               orderer signatures against /Channel/Orderer/BlockValidation,
//	               Raft's or SmartBFT's quorum), or auto (default): v2 where the
//	               ledger's config block carries a V2_0 or later capability;
//	               the summary then names "rules": "v2"
//	--policy P     endorsement policy, Fabric's language, of a chaincode the
//	               ledger holds no definition of (default: one member of any
//	               application organization of the channel, which is
//	               OR('Org1MSP.member') on our experiments' channels, the policy
//	               they instantiate with, and OR('SampleOrg.member') on the
//	               sample MSP's channel of FastFabric's benchmarks); a chaincode
//	               instantiated by an lscc transaction of the ledger uses the
//	               policy that transaction wrote
//	--msp-dir DIR  MSPs besides (or, for the same ID, instead of) those of the
//	               ledger's config block, needed where the ledger has none:
//	               MSPID=DIR for an MSP directory (cacerts/,
//	               intermediatecerts/), or a crypto directory of this
//	               repository's cryptogen or of Fabric's (repeatable)
//	--sample F     0 < F <= 1: verify the signatures of a deterministic sample
//	               of F of the transactions (seed --seed S, default 0) plus every
//	               one the ledger recorded as not VALID; the state is still
//	               replayed over every transaction; unsampled ones are not printed
//	--prestate M   auto (default): a key some transaction reads at version 0:0
//	               is taken as pre-loaded outside the ledger (the reference
//	               committer benchmark's accounts); empty: none is
//
// Where the MSPs come from, per ledger kind: Fabric 1.2 peer ledgers (a
// network's peer: block 0 from the orderer, Org1MSP and OrdererMSP; our
// upstream peer benchmark: block 0 from configtxtest.MakeGenesisBlock, the
// sample MSP SampleOrg), FastFabric's storage servers (block 0, SampleOrg)
// and the reference build's (cmd/peer, cmd/committerbench: block 0 from
// channelconfig.GenesisBlock, Org1MSP and OrdererMSP) all start with their
// channel's genesis config block, which holds every organization's root CAs.
// FastFabric's peer benchmark keeps its blocks from block 2 on, without a
// config block: give --msp-dir SampleOrg=<its build>/gopath/src/github.com/
// hyperledger/fabric/sampleconfig/msp.
//
// Exit status: 0 when every checked code equals the recorded one, 3 when
// any differs, 1 when a file cannot be read, the chain is broken, no MSP is
// available or (v2 rules) a block's data hash or orderer signatures do not
// verify, 2 on bad usage.
package main

import (
	"encoding/csv"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"fabricrepro/internal/blockfile"
	"fabricrepro/internal/txverify"
)

const usage = "usage: txverify [--rules auto|v1|v2] [--policy P] [--msp-dir DIR]... [--sample F --seed S] [--prestate auto|empty] FILE... (one ledger's blockfile_NNNNNN, in order)"

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

type multi []string

func (m *multi) String() string     { return strings.Join(*m, ",") }
func (m *multi) Set(s string) error { *m = append(*m, s); return nil }

// Summary is stderr's last line.
type Summary struct {
	Txs          int      `json:"txs"`
	Checked      int      `json:"checked"`
	Agree        int      `json:"agree"`
	Disagree     int      `json:"disagree"`
	Seconds      float64  `json:"seconds"`
	Source       string   `json:"source"`
	Channel      string   `json:"channel,omitempty"`
	MSPs         []string `json:"msps,omitempty"`
	Policy       string   `json:"policy,omitempty"`
	PrestateKeys int      `json:"prestate_keys"`
	Sample       float64  `json:"sample"`
	Seed         uint64   `json:"seed"`
	Rules        string   `json:"rules,omitempty"`
	Error        string   `json:"error,omitempty"`
}

func run(args []string, stdout, stderr io.Writer) int {
	start := time.Now()
	fs := flag.NewFlagSet("txverify", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var o txverify.Options
	var dirs multi
	fs.StringVar(&o.Policy, "policy", "", "endorsement policy of a chaincode the ledger does not define (default: any member of an application organization)")
	fs.Var(&dirs, "msp-dir", "MSPs: MSPID=DIR or a crypto directory (repeatable)")
	fs.Float64Var(&o.Sample, "sample", 1, "share of transactions whose signatures are verified (0 < F <= 1)")
	fs.Uint64Var(&o.Seed, "seed", 0, "seed of the sample")
	fs.StringVar(&o.Prestate, "prestate", "auto", "auto or empty")
	fs.StringVar(&o.Rules, "rules", "auto", "v1 (Fabric 1.2's committer), v2 (Fabric v2.x/v3.x's) or auto (by the config block's capabilities)")
	// Flags may come before, between or after the files.
	var files []string
	for {
		if err := fs.Parse(args); err != nil {
			fmt.Fprintf(stderr, "txverify: %v\n%s\n", err, usage)
			return 2
		}
		if fs.NArg() == 0 {
			break
		}
		files = append(files, fs.Arg(0))
		args = fs.Args()[1:]
	}
	if len(files) == 0 {
		fmt.Fprintln(stderr, usage)
		return 2
	}
	if !(o.Sample > 0 && o.Sample <= 1) {
		fmt.Fprintf(stderr, "txverify: --sample %v is not in (0, 1]\n%s\n", o.Sample, usage)
		return 2
	}
	if o.Prestate != "auto" && o.Prestate != "empty" {
		fmt.Fprintf(stderr, "txverify: --prestate %q is neither auto nor empty\n", o.Prestate)
		return 2
	}
	if o.Rules != "auto" && o.Rules != "v1" && o.Rules != "v2" {
		fmt.Fprintf(stderr, "txverify: --rules %q is neither v1, v2 nor auto\n", o.Rules)
		return 2
	}
	if _, err := txverify.ParsePolicy(o.Policy); o.Policy != "" && err != nil {
		fmt.Fprintf(stderr, "txverify: --policy: %v\n", err)
		return 2
	}
	o.MSPDirs = dirs
	s := Summary{Sample: o.Sample, Seed: o.Seed}
	fail := func(err error) int {
		s.Error = err.Error()
		s.Seconds = time.Since(start).Seconds()
		fmt.Fprintln(stderr, "txverify:", err)
		writeSummary(stderr, s)
		return 1
	}

	blocks, err := blockfile.ReadFiles(files)
	if err != nil {
		return fail(err)
	}
	if len(blocks) == 0 {
		return fail(fmt.Errorf("no block in %s", strings.Join(files, ", ")))
	}
	if err := blockfile.Check(blocks); err != nil {
		return fail(fmt.Errorf("chain: %w", err))
	}
	res, err := txverify.Verify(blocks, o)
	if err != nil {
		return fail(err)
	}

	w := csv.NewWriter(stdout)
	_ = w.Write([]string{"block_number", "tx_index", "tx_id", "recorded_code", "derived_code"})
	for _, r := range res.Rows {
		_ = w.Write([]string{strconv.FormatUint(r.Block, 10), strconv.Itoa(r.Index), r.TxID,
			txverify.CodeName(r.Recorded), txverify.CodeName(r.Derived)})
	}
	w.Flush()
	if err := w.Error(); err != nil {
		return fail(err)
	}
	for _, r := range res.Rows {
		if r.Agrees() {
			continue
		}
		why := ""
		if r.Reason != "" {
			why = ": " + r.Reason
		}
		fmt.Fprintf(stderr, "disagree: block %d tx %d (%s): recorded %s, derived %s%s\n", r.Block, r.Index, r.TxID,
			txverify.CodeName(r.Recorded), txverify.CodeName(r.Derived), why)
	}
	s.Txs, s.Checked, s.Agree, s.Disagree = res.Txs, res.Checked, res.Agree, res.Disagree
	s.Source, s.Channel, s.MSPs, s.Policy, s.PrestateKeys = res.Source, res.Channel, res.MSPIDs, res.Policy, res.Prestate
	if res.Rules != "v1" {
		s.Rules = res.Rules // a Fabric 1.2 ledger's summary stays as it was
	}
	s.Seconds = time.Since(start).Seconds()
	writeSummary(stderr, s)
	if res.Disagree > 0 {
		return 3
	}
	return 0
}

func writeSummary(w io.Writer, s Summary) {
	s.Seconds = float64(int64(s.Seconds*1000)) / 1000
	raw, _ := json.Marshal(s)
	fmt.Fprintln(w, string(raw))
}
