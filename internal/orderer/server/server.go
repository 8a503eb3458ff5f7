// Package server wires an orderer together from its configuration: the
// signing identity, the channel from the genesis block, its ledger and
// consenter, the AtomicBroadcast gRPC service and the metrics endpoint.
// cmd/orderer is a thin wrapper; tests start orderers in-process with it.
package server

import (
	"bytes"
	"errors"
	"fmt"
	"log"
	"net"
	"net/http"
	"path/filepath"
	"runtime/debug"
	"sync"
	"time"

	"google.golang.org/grpc"

	"fabricrepro/internal/channelconfig"
	"fabricrepro/internal/msp"
	"fabricrepro/internal/orderer/broadcast"
	"fabricrepro/internal/orderer/channel"
	"fabricrepro/internal/orderer/consensus"
	"fabricrepro/internal/orderer/consensus/solo"
	"fabricrepro/internal/orderer/deliver"
	"fabricrepro/internal/orderer/ledger"
	"fabricrepro/internal/orderer/metrics"
	cb "fabricrepro/internal/protos/common"
	ab "fabricrepro/internal/protos/orderer"
	"fabricrepro/internal/protoutil"
)

// ReadyLine is logged once the orderer accepts requests; the harness waits
// for it (Fabric's own line).
const ReadyLine = "Beginning to serve requests"

// stopGrace is how long Stop lets open streams finish.
const stopGrace = 5 * time.Second

// Orderer is a running orderer.
type Orderer struct {
	cfg       Config
	Metrics   *metrics.Metrics
	Registrar *channel.Registrar
	grpc      *grpc.Server
	lis       net.Listener
	metricsLn net.Listener
	http      *http.Server
	stopOnce  sync.Once
}

// New builds an orderer from cfg and binds its listeners (so Addr is known
// before Serve), but does not serve yet.
func New(cfg Config) (*Orderer, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	signer, err := msp.LoadSigningIdentity(cfg.MSPDir, cfg.MSPID)
	if err != nil {
		return nil, fmt.Errorf("orderer identity: %w", err)
	}
	genesis, err := channelconfig.ReadBlock(cfg.GenesisBlock)
	if err != nil {
		return nil, fmt.Errorf("genesis block: %w", err)
	}
	bundle, err := channelconfig.FromGenesisBlock(genesis)
	if err != nil {
		return nil, fmt.Errorf("genesis block: %w", err)
	}
	if bundle.MSPs.MSP(cfg.MSPID) == nil {
		return nil, fmt.Errorf("orderer MSP %s is not a member of channel %s", cfg.MSPID, bundle.ChannelID)
	}
	if _, err := bundle.MSPs.DeserializeIdentity(signer.Serialize()); err != nil {
		return nil, fmt.Errorf("orderer identity is not valid in channel %s: %w", bundle.ChannelID, err)
	}
	consenter, err := newConsenter(cfg.Consensus.Type, bundle)
	if err != nil {
		return nil, err
	}
	lg, err := openLedger(cfg.Ledger, bundle.ChannelID, genesis)
	if err != nil {
		return nil, err
	}
	m := metrics.New()
	ch, err := channel.New(bundle, lg, signer, consenter, m)
	if err != nil {
		lg.Close()
		return nil, err
	}
	o := &Orderer{cfg: cfg, Metrics: m, Registrar: channel.NewRegistrar(ch)}

	if o.lis, err = net.Listen("tcp", cfg.ListenAddress); err != nil {
		lg.Close()
		return nil, err
	}
	if cfg.MetricsAddress != "" {
		if o.metricsLn, err = net.Listen("tcp", cfg.MetricsAddress); err != nil {
			o.lis.Close()
			lg.Close()
			return nil, err
		}
		mux := http.NewServeMux()
		mux.Handle("/metrics", m.Handler())
		o.http = &http.Server{Handler: mux}
	}
	o.grpc = grpc.NewServer(grpc.MaxRecvMsgSize(cfg.GRPC.MaxRecvMsgSize), grpc.MaxSendMsgSize(cfg.GRPC.MaxSendMsgSize))
	ab.RegisterAtomicBroadcastServer(o.grpc, &service{
		bh: &broadcast.Handler{Registrar: o.Registrar, Metrics: m},
		dh: &deliver.Handler{Registrar: o.Registrar, Metrics: m, TimeWindow: cfg.Deliver.TimeWindow},
	})
	for _, c := range o.Registrar.Chains() {
		c.Start()
	}
	return o, nil
}

func newConsenter(typ string, bundle *channelconfig.Bundle) (consensus.Consenter, error) {
	if typ != "solo" {
		return nil, fmt.Errorf("consensus type %q is not supported", typ)
	}
	if bundle.Batch.ConsensusType != "" && bundle.Batch.ConsensusType != typ {
		return nil, fmt.Errorf("channel %s wants consensus %q but the orderer runs %q", bundle.ChannelID, bundle.Batch.ConsensusType, typ)
	}
	return solo.New(), nil
}

// openLedger opens the channel's ledger and, if it is new, writes the
// genesis block. A file ledger that already holds a different block 0 is
// refused, so a stale directory is never silently reused for another network.
func openLedger(cfg LedgerConfig, channelID string, genesis *cb.Block) (ledger.Ledger, error) {
	var lg ledger.Ledger
	switch cfg.Type {
	case "ram":
		lg = ledger.NewRAM(cfg.RAMSize)
	case "file":
		f, err := ledger.OpenFile(filepath.Join(cfg.Dir, channelID), cfg.Fsync)
		if err != nil {
			return nil, err
		}
		lg = f
	default:
		return nil, fmt.Errorf("ledger type %q is not supported", cfg.Type)
	}
	if lg.Height() == 0 {
		if err := lg.Append(genesis); err != nil {
			lg.Close()
			return nil, err
		}
		return lg, nil
	}
	first, err := lg.Block(0)
	if err != nil {
		lg.Close()
		return nil, err
	}
	if !bytes.Equal(protoutil.BlockHeaderHash(first.Header), protoutil.BlockHeaderHash(genesis.Header)) {
		lg.Close()
		return nil, fmt.Errorf("ledger in %s was started from another genesis block", cfg.Dir)
	}
	log.Printf("[channel: %s] reopened ledger at height %d", channelID, lg.Height())
	return lg, nil
}

// Addr is the address the AtomicBroadcast service listens on.
func (o *Orderer) Addr() string { return o.lis.Addr().String() }

// MetricsAddr is the metrics endpoint's address ("" if disabled).
func (o *Orderer) MetricsAddr() string {
	if o.metricsLn == nil {
		return ""
	}
	return o.metricsLn.Addr().String()
}

// Serve serves requests until Stop; it logs ReadyLine first.
func (o *Orderer) Serve() error {
	if o.http != nil {
		go func() {
			if err := o.http.Serve(o.metricsLn); err != nil && !errors.Is(err, http.ErrServerClosed) {
				log.Printf("metrics server: %v", err)
			}
		}()
	}
	for _, c := range o.Registrar.Chains() {
		b := c.Bundle().Batch
		log.Printf("[channel: %s] ledger height %d, batch: MaxMessageCount=%d PreferredMaxBytes=%d AbsoluteMaxBytes=%d BatchTimeout=%s",
			c.ChannelID(), c.Ledger().Height(), b.MaxMessageCount, b.PreferredMaxBytes, b.AbsoluteMaxBytes, b.Timeout)
	}
	log.Printf("%s on %s (metrics on %s)", ReadyLine, o.Addr(), o.MetricsAddr())
	err := o.grpc.Serve(o.lis)
	if errors.Is(err, grpc.ErrServerStopped) {
		return nil
	}
	return err
}

// Stop halts the consenters (writing the blocks already cut), ends all
// streams, and closes the ledgers.
func (o *Orderer) Stop() {
	o.stopOnce.Do(func() {
		for _, c := range o.Registrar.Chains() {
			c.Halt()
		}
		// Halting closed every channel's Errored, so Deliver streams return.
		// Broadcast streams idle in Recv would keep GracefulStop waiting, so
		// it gets a deadline before connections are cut.
		done := make(chan struct{})
		go func() { o.grpc.GracefulStop(); close(done) }()
		select {
		case <-done:
		case <-time.After(stopGrace):
			o.grpc.Stop()
			<-done
		}
		if o.http != nil {
			o.http.Close()
		}
		for _, c := range o.Registrar.Chains() {
			if err := c.Ledger().Close(); err != nil {
				log.Printf("[channel: %s] closing ledger: %v", c.ChannelID(), err)
			}
		}
	})
}

// service is the AtomicBroadcast gRPC service; a panic in a handler ends
// only that stream, as Fabric's server does.
type service struct {
	ab.UnimplementedAtomicBroadcastServer
	bh *broadcast.Handler
	dh *deliver.Handler
}

func (s *service) Broadcast(srv ab.AtomicBroadcast_BroadcastServer) (err error) {
	defer recoverStream("Broadcast", &err)
	return s.bh.Handle(srv)
}

func (s *service) Deliver(srv ab.AtomicBroadcast_DeliverServer) (err error) {
	defer recoverStream("Deliver", &err)
	return s.dh.Handle(srv)
}

func recoverStream(name string, err *error) {
	if r := recover(); r != nil {
		log.Printf("%s client triggered panic: %v\n%s", name, r, debug.Stack())
		*err = fmt.Errorf("internal error")
	}
}
