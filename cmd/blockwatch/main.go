// Command blockwatch is a Deliver client that records every block of a
// channel as it arrives from a peer (full blocks, with validation flags) or
// an orderer:
//
//	bin/blockwatch --config blockwatch.yaml --out blocks.csv --timeout 60s
//
// It writes one CSV row per block (docs/interfaces.md):
//
//	block_number,arrival_ns,tx_count,valid_count,bytes
//
// flushed after every block. With --txs-out it also writes one row per
// transaction of every block (docs/interfaces.md):
//
//	block_number,tx_index,tx_id,validation_code
//
// With --chain-out it also writes one row per block of what the hash chain
// needs (an orderer's ledger has no validation codes to prove counts by):
//
//	block_number,arrival_ns,tx_count,data_hash_ok,previous_hash,header_hash,signatures
//
// data_hash_ok is 1 where the header's data hash is the hash of the block's
// envelopes, previous_hash and header_hash are hex (the block's header hash as
// the next block must name it), signatures is how many signatures the
// block's SIGNATURES metadata carries (a SmartBFT block: one per consenter of
// the quorum that decided it). The checks are the reader's (systems/fabric-3.1).
//
// (validation_code is the peer's TxValidationCode name, e.g. VALID or
// MVCC_READ_CONFLICT; blocks from an orderer carry no flags and count as
// VALID), so that end-to-end latency is matched by transaction ID and
// invalid transactions are excluded by their code. A gap in block numbers or a broken stream is
// re-requested from the expected block; no block is skipped. It exits 0 after
// block stopAfter, 3 when --timeout expires first (the file keeps what
// arrived), 2 on a bad configuration and 1 on other errors.
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"time"

	"google.golang.org/protobuf/proto"

	"fabricrepro/internal/channelconfig"
	"fabricrepro/internal/config"
	"fabricrepro/internal/deliverclient"
	"fabricrepro/internal/grpcdial"
	"fabricrepro/internal/msp"
	cb "fabricrepro/internal/protos/common"
	pb "fabricrepro/internal/protos/peer"
	"fabricrepro/internal/protoutil"
)

// Config is blockwatch.yaml.
type Config struct {
	// Address of the peer or orderer (host:port).
	Address string `yaml:"address"`
	// Source is "peer" (protos.Deliver, full blocks with validation flags)
	// or "orderer" (AtomicBroadcast.Deliver; every tx counts as valid).
	Source string `yaml:"source"`
	// MSPDir and MSPID: the identity that signs the seek request.
	MSPDir string `yaml:"mspDir"`
	MSPID  string `yaml:"mspID"`
	// GenesisBlock gives the channel ID (or set Channel).
	GenesisBlock string `yaml:"genesisBlock"`
	Channel      string `yaml:"channel"`
	// StartBlock is the first block recorded.
	StartBlock uint64 `yaml:"startBlock"`
	// StopAfter is the last block recorded; omit to watch until --timeout.
	StopAfter *uint64 `yaml:"stopAfter"`
	// Retry is the pause before re-opening a broken stream.
	Retry time.Duration `yaml:"retry"`
	// TLSRootCerts are PEM files of the CAs the source's TLS certificate
	// chains to: given, the connection is TLS (Fabric v2.5/v3.1).
	TLSRootCerts []string `yaml:"tlsRootCerts"`
}

func main() { os.Exit(run()) }

func run() int {
	cfgPath := flag.String("config", "blockwatch.yaml", "configuration file")
	out := flag.String("out", "blocks.csv", "CSV output file")
	txsOut := flag.String("txs-out", "", "CSV of every block's transaction IDs and validation codes (optional)")
	chainOut := flag.String("chain-out", "", "CSV of every block's hashes and signature count (optional)")
	timeout := flag.Duration("timeout", 0, "give up after this long (exit 3); 0 = no limit")
	flag.Parse()

	cfg := Config{Source: "peer", Retry: 200 * time.Millisecond}
	if err := config.Load(*cfgPath, &cfg); err != nil {
		fmt.Fprintln(os.Stderr, "blockwatch:", err)
		return 2
	}
	if err := cfg.check(); err != nil {
		fmt.Fprintf(os.Stderr, "blockwatch: config %s: %v\n", *cfgPath, err)
		return 2
	}
	channel, err := cfg.channel()
	if err != nil {
		fmt.Fprintln(os.Stderr, "blockwatch:", err)
		return 1
	}
	signer, err := msp.LoadSigningIdentity(cfg.MSPDir, cfg.MSPID)
	if err != nil {
		fmt.Fprintln(os.Stderr, "blockwatch:", err)
		return 1
	}
	conn, err := grpcdial.Dial(cfg.Address, cfg.TLSRootCerts)
	if err != nil {
		fmt.Fprintln(os.Stderr, "blockwatch:", err)
		return 1
	}
	defer conn.Close()
	stop := uint64(deliverclient.NoStop)
	if cfg.StopAfter != nil {
		stop = *cfg.StopAfter
	}
	var src deliverclient.Source
	if cfg.Source == "orderer" {
		src = &deliverclient.OrdererSource{Conn: conn, Channel: channel, Signer: signer, Stop: stop}
	} else {
		src = &deliverclient.PeerSource{Conn: conn, Channel: channel, Signer: signer, Stop: stop}
	}

	f, err := os.Create(*out)
	if err != nil {
		fmt.Fprintln(os.Stderr, "blockwatch:", err)
		return 1
	}
	defer f.Close()
	w := bufio.NewWriter(f)
	defer w.Flush()
	var txw *bufio.Writer
	if *txsOut != "" {
		tf, err := os.Create(*txsOut)
		if err != nil {
			fmt.Fprintln(os.Stderr, "blockwatch:", err)
			return 1
		}
		defer tf.Close()
		txw = bufio.NewWriter(tf)
		defer txw.Flush()
	}

	var chw *bufio.Writer
	if *chainOut != "" {
		cf, err := os.Create(*chainOut)
		if err != nil {
			fmt.Fprintln(os.Stderr, "blockwatch:", err)
			return 1
		}
		defer cf.Close()
		chw = bufio.NewWriter(cf)
		defer chw.Flush()
	}

	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt)
	defer cancel()
	if *timeout > 0 {
		var c context.CancelFunc
		ctx, c = context.WithTimeout(ctx, *timeout)
		defer c()
	}
	n, err := watch(ctx, src, cfg.StartBlock, stop, cfg.Retry, w, txw, chw)
	if ferr := w.Flush(); ferr != nil && err == nil {
		err = ferr
	}
	switch {
	case err == nil:
		fmt.Fprintf(os.Stderr, "blockwatch: recorded %d blocks up to block %d\n", n, stop)
		return 0
	case errors.Is(err, context.DeadlineExceeded):
		fmt.Fprintf(os.Stderr, "blockwatch: timeout after %s with %d blocks recorded\n", *timeout, n)
		return 3
	case errors.Is(err, context.Canceled):
		fmt.Fprintf(os.Stderr, "blockwatch: interrupted with %d blocks recorded\n", n)
		return 3
	default:
		fmt.Fprintln(os.Stderr, "blockwatch:", err)
		return 1
	}
}

// channel is Channel, or else the channel of GenesisBlock (a reference
// genesis block or a real Fabric channel's block 0: only its channel ID is read).
func (c *Config) channel() (string, error) {
	if c.Channel != "" {
		return c.Channel, nil
	}
	return channelconfig.ReadChannelID(c.GenesisBlock)
}

func (c *Config) check() error {
	switch {
	case c.Address == "":
		return errors.New("address is required")
	case c.Source != "peer" && c.Source != "orderer":
		return fmt.Errorf("source must be peer or orderer, not %q", c.Source)
	case c.MSPDir == "" || c.MSPID == "":
		return errors.New("mspDir and mspID are required")
	case c.Channel == "" && c.GenesisBlock == "":
		return errors.New("genesisBlock (or channel) is required")
	case c.StopAfter != nil && *c.StopAfter < c.StartBlock:
		return errors.New("stopAfter is before startBlock")
	}
	return nil
}

// Header is the CSV header of docs/interfaces.md.
const Header = "block_number,arrival_ns,tx_count,valid_count,bytes"

// TxHeader is the CSV header of --txs-out (docs/interfaces.md).
const TxHeader = "block_number,tx_index,tx_id,validation_code"

// ChainHeader is the CSV header of --chain-out.
const ChainHeader = "block_number,arrival_ns,tx_count,data_hash_ok,previous_hash,header_hash,signatures"

// watch records blocks start..stop to w (and, if txw is not nil, their
// transactions to txw; if chw is not nil, their hashes to chw) and returns
// how many blocks it recorded.
func watch(ctx context.Context, src deliverclient.Source, start, stop uint64, retry time.Duration, w, txw *bufio.Writer, chw ...*bufio.Writer) (int, error) {
	var cw *bufio.Writer
	if len(chw) > 0 {
		cw = chw[0]
	}
	// Headers go to disk at once: a watcher stopped before its first block
	// leaves files with no rows, not empty files.
	if _, err := fmt.Fprintln(w, Header); err != nil {
		return 0, err
	}
	if err := w.Flush(); err != nil {
		return 0, err
	}
	if txw != nil {
		if _, err := fmt.Fprintln(txw, TxHeader); err != nil {
			return 0, err
		}
		if err := txw.Flush(); err != nil {
			return 0, err
		}
	}
	if cw != nil {
		if _, err := fmt.Fprintln(cw, ChainHeader); err != nil {
			return 0, err
		}
		if err := cw.Flush(); err != nil {
			return 0, err
		}
	}
	n := 0
	err := deliverclient.Watch(ctx, src, deliverclient.Options{
		Start: start, Stop: stop, Retry: retry,
		OnReconnect: func(expected uint64, reason error) {
			fmt.Fprintf(os.Stderr, "blockwatch: re-requesting from block %d: %v\n", expected, reason)
		},
	}, func(b *cb.Block, arrival time.Time) error {
		n++
		txs := 0
		if b.Data != nil {
			txs = len(b.Data.Data)
		}
		if txw != nil {
			// transactions first: a block row means its transactions are on disk
			if err := writeTxs(txw, b); err != nil {
				return err
			}
		}
		if cw != nil {
			if err := writeChain(cw, b, arrival, txs); err != nil {
				return err
			}
		}
		if _, err := fmt.Fprintf(w, "%d,%d,%d,%d,%d\n", b.Header.Number, arrival.UnixNano(), txs, deliverclient.ValidCount(b), proto.Size(b)); err != nil {
			return err
		}
		return w.Flush()
	})
	return n, err
}

// writeTxs writes one row per transaction of b: its ID (from the envelope's
// channel header; empty if the envelope does not decode) and its validation
// code (VALID where the block carries no flags, as deliverclient.ValidCount).
func writeTxs(txw *bufio.Writer, b *cb.Block) error {
	if b.Data == nil {
		return nil
	}
	var filter []byte
	if b.Metadata != nil && len(b.Metadata.Metadata) > int(cb.BlockMetadataIndex_TRANSACTIONS_FILTER) {
		filter = b.Metadata.Metadata[cb.BlockMetadataIndex_TRANSACTIONS_FILTER]
	}
	for i, raw := range b.Data.Data {
		id := ""
		env := &cb.Envelope{}
		if proto.Unmarshal(raw, env) == nil {
			if _, chdr, _, err := protoutil.UnmarshalPayload(env); err == nil {
				id = chdr.TxId
			}
		}
		code := pb.TxValidationCode_VALID
		if i < len(filter) {
			code = pb.TxValidationCode(filter[i])
		}
		if _, err := fmt.Fprintf(txw, "%d,%d,%s,%s\n", b.Header.Number, i, id, code); err != nil {
			return err
		}
	}
	return txw.Flush()
}

// writeChain writes block b's row of --chain-out.
func writeChain(cw *bufio.Writer, b *cb.Block, arrival time.Time, txs int) error {
	ok := 0
	if bytes.Equal(b.Header.DataHash, protoutil.BlockDataHash(b.Data)) {
		ok = 1
	}
	sigs := 0
	if b.Metadata != nil && len(b.Metadata.Metadata) > int(cb.BlockMetadataIndex_SIGNATURES) {
		md := &cb.Metadata{}
		if proto.Unmarshal(b.Metadata.Metadata[cb.BlockMetadataIndex_SIGNATURES], md) == nil {
			sigs = len(md.Signatures)
		}
	}
	if _, err := fmt.Fprintf(cw, "%d,%d,%d,%d,%s,%s,%d\n", b.Header.Number, arrival.UnixNano(), txs, ok,
		hex.EncodeToString(b.Header.PreviousHash), hex.EncodeToString(protoutil.BlockHeaderHash(b.Header)), sigs); err != nil {
		return err
	}
	return cw.Flush()
}
