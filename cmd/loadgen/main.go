// Command loadgen drives the money-transfer workload (workloads/money-transfer),
// or with workload: smallbank Caliper's smallbank operations (workloads/smallbank),
// or with workload: envelopes signed envelopes of opaque data of a fixed size for an
// ordering service alone (envelopes.go):
//
//	bin/loadgen --config loadgen.yaml --out txs.csv [--phase setup|transfer]
//	            [--forge-endorsement N|F] [--corrupt-creator N|F] [--stale-read N|F] [--mutations mutations.csv]
//
// Phase "setup" deploys the chaincode through lscc with the configured
// endorsement policy (and waits until the deploy commits, since creating
// accounts needs it), then creates `accounts` accounts, and with
// setup.wait (the default) waits until every create has committed, watching
// the first endorser's Deliver stream; it fails if any create is invalid.
// With setup.wait: false the caller must wait for the creates (e.g. with
// blockwatch) before starting the transfer phase.
//
// Phase "transfer" first pre-endorses transfer.transactions transfers
// (endorseConcurrency proposals in flight), then sends the envelopes to the
// orderers over `streams` Broadcast streams: open loop at transfer.rate tx/s
// following a schedule fixed in advance, or as fast as accepted (rate 0).
//
// Both phases write one CSV row per transaction to --out
// (tx_id,scheduled_ns,submitted_ns,acked_ns,status; a time that never
// happened is 0) and print one JSON summary line to stdout
// ({"sent","acked","failed","target_tps","max_lag_ns","p99_lag_ns","duration_ns"}),
// as docs/interfaces.md fixes. Exit status: 0 done (failed transactions are
// counted, not fatal), 1 a run error (an endorsement refused, setup
// transactions invalid), 2 a configuration error.
//
// Mutations (docs/validity.md, item 2): --forge-endorsement, --corrupt-creator
// and --stale-read (transfer.forgeEndorsement, corruptCreator, staleRead),
// each a count ("3") or a fraction of the transfers ("0.0075"), corrupt
// transfers spread evenly over the run: a flipped byte of the endorsement
// signature (ENDORSEMENT_POLICY_FAILURE), of the creator's envelope signature
// (BAD_CREATOR_SIGNATURE; a Fabric 1.x orderer refuses such an envelope at
// broadcast with FORBIDDEN, its Writers policy checking the same signature,
// and ends the stream, so each is sent on a Broadcast stream of its own),
// or a read of an account that an earlier transfer of the same broadcast
// stream overwrites (MVCC_READ_CONFLICT). The transfer phase writes them to
// --mutations (default mutations.csv beside --out; header
// block_number,tx_index,tx_id,mutation, block and index -1) and prints
// "mutation <kind> <txid>" on stderr ("forged <txid>" too for a corrupted
// endorsement), then how many of them the orderer refused.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"time"

	"google.golang.org/grpc"

	"fabricrepro/internal/chaincode/lifecycle"
	"fabricrepro/internal/channelconfig"
	"fabricrepro/internal/config"
	"fabricrepro/internal/deliverclient"
	"fabricrepro/internal/grpcdial"
	"fabricrepro/internal/msp"
	pb "fabricrepro/internal/protos/peer"
	moneytransfer "fabricrepro/workloads/money-transfer"
	"fabricrepro/workloads/smallbank"
)

// setupChunk bounds how many setup transactions are held in memory at once.
const setupChunk = 10000

func main() { os.Exit(run()) }

func run() int {
	cfgPath := flag.String("config", "loadgen.yaml", "configuration file")
	out := flag.String("out", "txs.csv", "per-transaction CSV output")
	phase := flag.String("phase", "", "setup or transfer (overrides the config's phase)")
	share := "a count (3) or a fraction of the transfers (0.01)"
	forge := flag.String("forge-endorsement", "", "transfers whose endorsement signature is corrupted: "+share+" (overrides transfer.forgeEndorsement)")
	creator := flag.String("corrupt-creator", "", "transfers whose creator's envelope signature is corrupted: "+share+" (overrides transfer.corruptCreator)")
	stale := flag.String("stale-read", "", "transfers reading a version an earlier transfer overwrites: "+share+" (overrides transfer.staleRead)")
	mutationsOut := flag.String("mutations", "", "mutations.csv of the transfer phase (default: mutations.csv beside --out)")
	flag.Parse()

	cfg := defaults()
	if err := config.Load(*cfgPath, &cfg); err != nil {
		fmt.Fprintln(os.Stderr, "loadgen:", err)
		return 2
	}
	if *phase != "" {
		cfg.Phase = *phase
	}
	for _, f := range []struct {
		name, value string
		into        *Share
	}{{"forge-endorsement", *forge, &cfg.Transfer.ForgeEndorsement}, {"corrupt-creator", *creator, &cfg.Transfer.CorruptCreator},
		{"stale-read", *stale, &cfg.Transfer.StaleRead}} {
		if f.value == "" {
			continue
		}
		v, err := ParseShare(f.value)
		if err != nil {
			fmt.Fprintf(os.Stderr, "loadgen: --%s: %v\n", f.name, err)
			return 2
		}
		*f.into = v
	}
	cfg.MutationsOut = *mutationsOut
	if cfg.MutationsOut == "" {
		cfg.MutationsOut = filepath.Join(filepath.Dir(*out), "mutations.csv")
	}
	if err := cfg.check(); err != nil {
		fmt.Fprintf(os.Stderr, "loadgen: config %s: %v\n", *cfgPath, err)
		return 2
	}
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt)
	defer cancel()
	recs, summary, err := execute(ctx, &cfg)
	if recs != nil {
		if werr := writeCSV(*out, recs); werr != nil && err == nil {
			err = werr
		}
	}
	if summary != nil {
		line, _ := json.Marshal(summary)
		fmt.Println(string(line))
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "loadgen:", err)
		return 1
	}
	return 0
}

// execute runs the configured phase.
func execute(ctx context.Context, cfg *Config) ([]Record, *Summary, error) {
	// Only the channel ID is needed: the block may be a real Fabric channel's
	// block 0, whose ImplicitMeta policies the reference build does not compile.
	channel, err := channelconfig.ReadChannelID(cfg.GenesisBlock)
	if err != nil {
		return nil, nil, err
	}
	signer, err := msp.LoadSigningIdentity(cfg.MSPDir, cfg.MSPID)
	if err != nil {
		return nil, nil, err
	}
	var conns []*grpc.ClientConn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	connect := func(addrs []string) ([]*grpc.ClientConn, error) {
		var out []*grpc.ClientConn
		for _, a := range addrs {
			c, err := grpcdial.Dial(a, cfg.TLSRootCerts)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", a, err)
			}
			conns = append(conns, c)
			out = append(out, c)
		}
		return out, nil
	}
	if cfg.Workload == EnvelopesWorkload {
		orderers, err := connect(cfg.Orderers)
		if err != nil {
			return nil, nil, err
		}
		return sendEnvelopes(ctx, cfg, channel, signer, ordering{conns: orderers, toAll: cfg.BroadcastToAll})
	}
	peers, err := connect(cfg.Endorsers)
	if err != nil {
		return nil, nil, err
	}
	orderers, err := connect(cfg.Orderers)
	if err != nil {
		return nil, nil, err
	}
	e := &endorsers{perTx: cfg.EndorsersPerTx, channel: channel, cc: cfg.Chaincode, signer: signer}
	for _, c := range peers {
		e.clients = append(e.clients, pb.NewEndorserClient(c))
	}
	if cfg.Phase == "setup" {
		src := &deliverclient.PeerSource{Conn: peers[0], Channel: channel, Signer: signer, Stop: deliverclient.NoStop}
		return setup(ctx, cfg, e, ordering{conns: orderers, toAll: cfg.BroadcastToAll}, src)
	}
	return transfer(ctx, cfg, e, ordering{conns: orderers, toAll: cfg.BroadcastToAll})
}

// transfer is phase 1 (pre-endorse) and phase 2 (broadcast) of the run.
func transfer(ctx context.Context, cfg *Config, e *endorsers, orderers ordering) ([]Record, *Summary, error) {
	t := cfg.Transfer
	plan, err := PlanTransfers(t.Transactions, cfg.Accounts, t.ConflictRate, cfg.Seed)
	if err != nil {
		return nil, nil, err
	}
	muts, err := cfg.mutations()
	if err != nil {
		return nil, nil, err
	}
	applyStaleReads(plan, muts)
	kind := make([]string, len(plan))
	for _, m := range muts {
		kind[m.Index] = m.Kind
	}
	pad := padding(t.PayloadBytes)
	began := time.Now()
	argsOf := func(i int) [][]byte {
		return moneytransfer.TransferArgs(moneytransfer.AccountName(plan[i].From), moneytransfer.AccountName(plan[i].To), t.Amount, pad)
	}
	if cfg.Workload == "smallbank" {
		// The operations are drawn up front, in plan order, so that a seed gives one workload.
		r := rand.New(rand.NewSource(cfg.Seed))
		ops := make([][][]byte, len(plan))
		for i, p := range plan {
			ops[i] = smallbank.OperationArgs(r, p.From, p.To)
		}
		argsOf = func(i int) [][]byte { return ops[i] }
	}
	txs, err := e.endorseAll(ctx, len(plan), cfg.EndorseConcurrency, argsOf, func(i int) string { return kind[i] })
	if err != nil {
		return nil, nil, fmt.Errorf("pre-endorsement: %w", err)
	}
	if len(muts) > 0 {
		for _, m := range muts {
			txs[m.Index].OwnStream = m.Kind == BadCreator
			fmt.Fprintln(os.Stderr, "mutation", m.Kind, txs[m.Index].TxID)
			if m.Kind == BadEndorsement {
				fmt.Fprintln(os.Stderr, "forged", txs[m.Index].TxID)
			}
		}
		if err := writeMutations(cfg.MutationsOut, muts, txs); err != nil {
			return nil, nil, err
		}
	}
	fmt.Fprintf(os.Stderr, "loadgen: pre-endorsed %d transfers in %s\n", len(txs), time.Since(began).Round(time.Millisecond))
	recs := broadcast(ctx, orderers, cfg.Streams, txs, t.Rate)
	if len(muts) > 0 {
		n, why := refusals(muts, recs)
		fmt.Fprintf(os.Stderr, "loadgen: %d transfers mutated (%s), the orderer refused %d of them", len(muts), cfg.MutationsOut, n)
		if n > 0 {
			fmt.Fprintf(os.Stderr, " (%s): those never reach a block", why)
		}
		fmt.Fprintln(os.Stderr)
	}
	s := Summarize(recs, t.Rate)
	return recs, &s, ctx.Err()
}

// setup deploys the chaincode and creates the accounts.
func setup(ctx context.Context, cfg *Config, e *endorsers, orderers ordering, src deliverclient.Source) ([]Record, *Summary, error) {
	wctx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	waiter, err := startWaiter(wctx, src)
	if err != nil {
		return nil, nil, err
	}
	var recs []Record
	if cfg.Setup.Deploy {
		pol, _ := cfg.Setup.Policy.envelope()
		args, err := lifecycle.DeployArgs(cfg.Chaincode, cfg.Setup.ChaincodeVersion, pol)
		if err != nil {
			return nil, nil, err
		}
		lscc := *e
		lscc.cc = lifecycle.Name
		tx, err := lscc.endorse(ctx, 0, args, "")
		if err != nil {
			return nil, nil, fmt.Errorf("deploy: %w", err)
		}
		r := broadcast(ctx, orderers, 1, []Endorsed{tx}, 0)
		recs = append(recs, r...)
		if r[0].Status != "SUCCESS" {
			return recs, nil, fmt.Errorf("deploy: orderer answered %s", r[0].Status)
		}
		tctx, c := context.WithTimeout(ctx, cfg.Setup.WaitTimeout)
		invalid, example, err := waiter.wait(tctx, []string{tx.TxID})
		c()
		if err != nil {
			return recs, nil, fmt.Errorf("deploy: %w", err)
		}
		if invalid > 0 {
			return recs, nil, fmt.Errorf("deploy committed as invalid (%s)", example)
		}
		fmt.Fprintf(os.Stderr, "loadgen: deployed %s %s\n", cfg.Chaincode, cfg.Setup.ChaincodeVersion)
	}
	pad := padding(cfg.Setup.PaddingBytes)
	var ids []string
	for lo := 0; lo < cfg.Accounts; lo += setupChunk {
		n := min(setupChunk, cfg.Accounts-lo)
		txs, err := e.endorseAll(ctx, n, cfg.EndorseConcurrency, func(i int) [][]byte {
			if cfg.Workload == "smallbank" {
				return smallbank.CreateArgs(lo + i)
			}
			return moneytransfer.CreateArgs(moneytransfer.AccountName(lo+i), cfg.Setup.InitialBalance, pad)
		}, func(int) string { return "" })
		if err != nil {
			return recs, nil, fmt.Errorf("create accounts: %w", err)
		}
		r := broadcast(ctx, orderers, cfg.Streams, txs, 0)
		recs = append(recs, r...)
		for _, t := range txs {
			ids = append(ids, t.TxID)
		}
	}
	s := Summarize(recs, 0)
	if s.Failed > 0 {
		return recs, &s, fmt.Errorf("%d setup transactions were not accepted by the orderer", s.Failed)
	}
	if !cfg.Setup.Wait {
		return recs, &s, nil
	}
	tctx, c := context.WithTimeout(ctx, cfg.Setup.WaitTimeout)
	defer c()
	invalid, example, err := waiter.wait(tctx, ids)
	if err != nil {
		return recs, &s, err
	}
	if invalid > 0 {
		return recs, &s, fmt.Errorf("%d account creations committed as invalid (first: %s)", invalid, example)
	}
	fmt.Fprintf(os.Stderr, "loadgen: %d accounts created and committed\n", cfg.Accounts)
	return recs, &s, nil
}

// padding returns n filler bytes.
func padding(n int) []byte {
	p := make([]byte, n)
	for i := range p {
		p[i] = 'a' + byte(i%26)
	}
	return p
}

// writeCSV writes the records in transaction order.
func writeCSV(path string, recs []Record) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	fmt.Fprintln(w, CSVHeader)
	for _, r := range recs {
		w.WriteString(r.TxID)
		for _, v := range []int64{r.Scheduled, r.Submitted, r.Acked} {
			w.WriteByte(',')
			w.WriteString(strconv.FormatInt(v, 10))
		}
		w.WriteByte(',')
		w.WriteString(r.Status)
		w.WriteByte('\n')
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
