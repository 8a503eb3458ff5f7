package peer

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"math"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"fabricrepro/internal/channelconfig"
	"fabricrepro/internal/chaincode"
	"fabricrepro/internal/committer"
	"fabricrepro/internal/msp"
	cb "fabricrepro/internal/protos/common"
	ab "fabricrepro/internal/protos/orderer"
	pb "fabricrepro/internal/protos/peer"
	"fabricrepro/internal/protoutil"
)

// ReadyMessage is logged once the peer serves requests; deploy tooling
// waits for it (the orderer logs the same words).
const ReadyMessage = "Beginning to serve requests"

// Peer is a running peer.
type Peer struct {
	cfg     Settings
	bundle  *channelconfig.Bundle
	signer  *msp.SigningIdentity
	ledger  *committer.Ledger
	blocks  *committer.BlockLog
	grpc    *grpc.Server
	lis     net.Listener
	metrics *http.Server
	stateMu sync.RWMutex // Fabric's commitRWLock: committer writes, endorser reads

	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{}
	wg     sync.WaitGroup
	once   sync.Once
}

// New opens the ledger, sets up the services and listens, but does not
// serve yet. The endorser role runs chaincodes.
func New(c Config, chaincodes *chaincode.Registry) (*Peer, error) {
	s := c.Peer
	gen, err := channelconfig.ReadBlock(s.GenesisBlock)
	if err != nil {
		return nil, err
	}
	bundle, err := channelconfig.FromGenesisBlock(gen)
	if err != nil {
		return nil, fmt.Errorf("genesis block %s: %w", s.GenesisBlock, err)
	}
	signer, err := msp.LoadSigningIdentity(s.MSPDir, s.MSPID)
	if err != nil {
		return nil, err
	}
	if _, err := bundle.MSPs.DeserializeIdentity(signer.Serialize()); err != nil {
		return nil, fmt.Errorf("the peer's identity is not valid on channel %s: %w", bundle.ChannelID, err)
	}
	p := &Peer{cfg: s, bundle: bundle, signer: signer, done: make(chan struct{})}
	p.ctx, p.cancel = context.WithCancel(context.Background())

	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	metrics := committer.NewMetrics(reg)
	if s.BlockLog != "" {
		if err := os.MkdirAll(filepath.Dir(s.BlockLog), 0o755); err != nil {
			return nil, err
		}
		if p.blocks, err = committer.OpenBlockLog(s.BlockLog); err != nil {
			return nil, err
		}
	}
	p.ledger, err = committer.OpenLedger(s.DataDir, committer.Config{ChannelID: bundle.ChannelID, VSCCWorkers: s.Validation.VSCCWorkers},
		bundle, gen, committer.LedgerOptions{Metrics: metrics, BlockLog: p.blocks, Logf: log.Printf, StateLock: &p.stateMu})
	if err != nil {
		p.closeStores()
		return nil, err
	}

	p.grpc = grpc.NewServer(grpc.MaxRecvMsgSize(s.GRPC.MaxRecvMsgSize), grpc.MaxSendMsgSize(s.GRPC.MaxSendMsgSize))
	pb.RegisterDeliverServer(p.grpc, &DeliverService{ChannelID: bundle.ChannelID, Store: p.ledger.Store, Readers: bundle.Readers, Done: p.done})
	if s.Roles.Endorser {
		if err := registerEndorser(p, chaincodes); err != nil {
			p.closeStores()
			return nil, err
		}
	}
	if p.lis, err = net.Listen("tcp", s.ListenAddress); err != nil {
		p.closeStores()
		return nil, err
	}
	if s.MetricsAddress != "" {
		mux := http.NewServeMux()
		mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
		ml, err := net.Listen("tcp", s.MetricsAddress)
		if err != nil {
			p.lis.Close()
			p.closeStores()
			return nil, err
		}
		p.metrics = &http.Server{Handler: mux}
		go p.metrics.Serve(ml)
	}
	return p, nil
}

// Addr is the address the gRPC services listen on.
func (p *Peer) Addr() string { return p.lis.Addr().String() }

// Serve starts the committer's Deliver client (if that role is on) and
// serves gRPC until Stop.
func (p *Peer) Serve() error {
	if p.cfg.Roles.Committer {
		p.wg.Add(1)
		go func() { defer p.wg.Done(); p.pullBlocks() }()
	}
	log.Printf("%s on %s (channel %s, height %d, endorser=%t committer=%t)", ReadyMessage, p.Addr(),
		p.bundle.ChannelID, p.ledger.Store.Height(), p.cfg.Roles.Endorser, p.cfg.Roles.Committer)
	err := p.grpc.Serve(p.lis)
	if errors.Is(err, grpc.ErrServerStopped) {
		return nil
	}
	return err
}

// Stop ends streams, stops gRPC, waits for the committer to finish its
// block and closes the stores. It may be called more than once.
func (p *Peer) Stop() {
	p.once.Do(func() {
		p.cancel()
		close(p.done)
		stopped := make(chan struct{})
		go func() { p.grpc.GracefulStop(); close(stopped) }()
		select {
		case <-stopped:
		case <-time.After(5 * time.Second):
			p.grpc.Stop()
		}
		p.wg.Wait()
		if p.metrics != nil {
			p.metrics.Close()
		}
		p.closeStores()
	})
}

func (p *Peer) closeStores() {
	if p.ledger != nil {
		if err := p.ledger.Close(); err != nil {
			log.Printf("closing ledger: %v", err)
		}
	}
	if p.blocks != nil {
		p.blocks.Close()
	}
}

// pullBlocks is the committer role: a Deliver client on the orderer asking
// for every block from the ledger height on, reconnecting on any failure.
func (p *Peer) pullBlocks() {
	delay, err := time.ParseDuration(p.cfg.Orderer.ReconnectDelay)
	if err != nil || delay <= 0 {
		delay = 500 * time.Millisecond
	}
	for p.ctx.Err() == nil {
		err := p.deliverOnce()
		if p.ctx.Err() != nil {
			return
		}
		log.Printf("deliver from orderer %s: %v; reconnecting in %s", p.cfg.Orderer.Address, err, delay)
		select {
		case <-time.After(delay):
		case <-p.ctx.Done():
			return
		}
	}
}

func (p *Peer) deliverOnce() error {
	conn, err := grpc.NewClient(p.cfg.Orderer.Address, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(p.cfg.GRPC.MaxRecvMsgSize), grpc.MaxCallSendMsgSize(p.cfg.GRPC.MaxSendMsgSize)))
	if err != nil {
		return err
	}
	defer conn.Close()
	ctx, cancel := context.WithCancel(p.ctx)
	defer cancel()
	stream, err := ab.NewAtomicBroadcastClient(conn).Deliver(ctx)
	if err != nil {
		return err
	}
	next := p.ledger.Store.Height()
	seek := &ab.SeekInfo{
		Start:    &ab.SeekPosition{Type: &ab.SeekPosition_Specified{Specified: &ab.SeekSpecified{Number: next}}},
		Stop:     &ab.SeekPosition{Type: &ab.SeekPosition_Specified{Specified: &ab.SeekSpecified{Number: math.MaxUint64}}},
		Behavior: ab.SeekInfo_BLOCK_UNTIL_READY,
	}
	env, err := protoutil.SignedEnvelope(cb.HeaderType_DELIVER_SEEK_INFO, p.bundle.ChannelID, p.signer, seek)
	if err != nil {
		return err
	}
	if err := stream.Send(env); err != nil {
		return err
	}
	for {
		resp, err := stream.Recv()
		if err == io.EOF {
			return errors.New("orderer closed the stream")
		}
		if err != nil {
			return err
		}
		switch t := resp.Type.(type) {
		case *ab.DeliverResponse_Status:
			return fmt.Errorf("orderer returned status %s", t.Status)
		case *ab.DeliverResponse_Block:
			if _, err := p.ledger.Committer.Commit(t.Block); err != nil {
				// A rejected or failed block is not committed; start over
				// from the ledger height.
				return err
			}
		}
	}
}
