// Package channel holds the orderer's per-channel resources, as Fabric 1.2's
// multichannel.ChainSupport and msgprocessor.StandardChannel do: the
// channel's configuration bundle, the filters a normal message must pass,
// the block cutter, the block writer, the ledger and the consensus chain.
package channel

import (
	"fmt"
	"log"
	"sync"
	"time"

	"fabricrepro/internal/channelconfig"
	"fabricrepro/internal/orderer/blockcutter"
	"fabricrepro/internal/orderer/consensus"
	"fabricrepro/internal/orderer/ledger"
	"fabricrepro/internal/orderer/metrics"
	"fabricrepro/internal/policy"
	cb "fabricrepro/internal/protos/common"
	"fabricrepro/internal/protoutil"
)

// Classification says how broadcast must process a message (Fabric's
// msgprocessor.Classification).
type Classification int

// Message classes.
const (
	NormalMsg       Classification = iota // ordered as is
	ConfigUpdateMsg                       // a CONFIG_UPDATE to be turned into a CONFIG
	ConfigMsg                             // CONFIG / ORDERER_TRANSACTION: never accepted directly
)

// ClassifyMsg classifies by header type as Fabric's StandardChannel does.
func ClassifyMsg(chdr *cb.ChannelHeader) Classification {
	switch chdr.Type {
	case int32(cb.HeaderType_CONFIG_UPDATE):
		return ConfigUpdateMsg
	case int32(cb.HeaderType_ORDERER_TRANSACTION), int32(cb.HeaderType_CONFIG):
		return ConfigMsg
	default:
		return NormalMsg
	}
}

// Support is one channel on the orderer. It implements consensus.Support.
type Support struct {
	bundle  *channelconfig.Bundle
	ledger  ledger.Ledger
	cutter  *blockcutter.Receiver
	writer  *blockWriter
	rules   []Rule
	chain   consensus.Chain
	metrics *metrics.Metrics

	failOnce sync.Once
	failed   chan struct{} // closed on halt or write failure
}

// New assembles a channel over a ledger that already holds at least the
// genesis block, and creates its consensus chain (not yet started).
func New(bundle *channelconfig.Bundle, lg ledger.Ledger, signer protoutil.Signer, consenter consensus.Consenter, m *metrics.Metrics) (*Support, error) {
	h := lg.Height()
	if h == 0 {
		return nil, fmt.Errorf("channel %s: ledger is empty", bundle.ChannelID)
	}
	last, err := lg.Block(h - 1)
	if err != nil {
		return nil, fmt.Errorf("channel %s: reading last block: %w", bundle.ChannelID, err)
	}
	s := &Support{bundle: bundle, ledger: lg, metrics: m, failed: make(chan struct{})}
	s.cutter = blockcutter.New(func() blockcutter.Config {
		return blockcutter.Config{MaxMessageCount: s.bundle.Batch.MaxMessageCount, PreferredMaxBytes: s.bundle.Batch.PreferredMaxBytes}
	})
	s.writer = &blockWriter{
		channelID: bundle.ChannelID, signer: signer, ledger: lg, metrics: m, lastBlock: last,
		maxCount: func() uint32 { return s.bundle.Batch.MaxMessageCount },
		failed:   s.fail,
	}
	// Fabric's CreateStandardChannelFilters: empty reject, size, then the
	// Writers signature check.
	s.rules = []Rule{
		emptyReject,
		sizeFilter(func() uint32 { return s.bundle.Batch.AbsoluteMaxBytes }),
		sigFilter(channelconfig.WritersPolicy, func() *policy.Policy { return s.bundle.Writers }),
	}
	m.LedgerHeight.WithLabelValues(bundle.ChannelID).Set(float64(h))
	if s.chain, err = consenter.HandleChain(s); err != nil {
		return nil, fmt.Errorf("channel %s: %w", bundle.ChannelID, err)
	}
	return s, nil
}

// fail is called when a block cannot be written: the channel stops accepting
// messages and Deliver streams end (Fabric panics here).
func (s *Support) fail(err error) {
	log.Printf("[channel: %s] failed to write block, halting channel: %v", s.bundle.ChannelID, err)
	s.failOnce.Do(func() { close(s.failed) })
}

// ChannelID implements consensus.Support.
func (s *Support) ChannelID() string { return s.bundle.ChannelID }

// Sequence implements consensus.Support. Config updates are not supported
// yet, so the sequence stays at the genesis block's 0.
func (s *Support) Sequence() uint64 { return 0 }

// BatchTimeout implements consensus.Support.
func (s *Support) BatchTimeout() time.Duration { return s.bundle.Batch.Timeout }

// BlockCutter implements consensus.Support.
func (s *Support) BlockCutter() *blockcutter.Receiver { return s.cutter }

// CreateNextBlock implements consensus.Support.
func (s *Support) CreateNextBlock(batch []*cb.Envelope) *cb.Block {
	return s.writer.CreateNextBlock(batch)
}

// WriteBlock implements consensus.Support.
func (s *Support) WriteBlock(block *cb.Block, reason blockcutter.CutReason) {
	s.writer.WriteBlock(block, reason)
}

// Flush implements consensus.Support.
func (s *Support) Flush() { s.writer.Flush() }

// ProcessNormalMsg applies the channel's filters and returns the config
// sequence they were checked against (Fabric's StandardChannel).
func (s *Support) ProcessNormalMsg(env *cb.Envelope) (uint64, error) {
	seq := s.Sequence()
	return seq, applyRules(s.rules, env)
}

// Order hands a validated message to the consensus chain.
func (s *Support) Order(env *cb.Envelope, configSeq uint64) error {
	select {
	case <-s.failed:
		return fmt.Errorf("channel %s has failed", s.bundle.ChannelID)
	default:
	}
	return s.chain.Order(env, configSeq)
}

// WaitReady blocks until the consenter accepts messages.
func (s *Support) WaitReady() error { return s.chain.WaitReady() }

// Errored is closed when the channel halts or could not write a block, so
// Deliver streams end with SERVICE_UNAVAILABLE.
func (s *Support) Errored() <-chan struct{} { return s.failed }

// Ledger is the channel's block store.
func (s *Support) Ledger() ledger.Ledger { return s.ledger }

// Readers is the channel's Readers policy, checked by Deliver.
func (s *Support) Readers() *policy.Policy { return s.bundle.Readers }

// Bundle is the channel's configuration.
func (s *Support) Bundle() *channelconfig.Bundle { return s.bundle }

// Start starts the consensus chain.
func (s *Support) Start() { s.chain.Start() }

// Halt stops the chain and waits for the last block to be written.
func (s *Support) Halt() {
	s.chain.Halt()
	s.writer.Flush()
	s.failOnce.Do(func() { close(s.failed) })
}

// Registrar maps channel IDs to channels (Fabric's multichannel.Registrar).
type Registrar struct {
	chains map[string]*Support
}

// NewRegistrar returns a registrar over the given channels.
func NewRegistrar(chains ...*Support) *Registrar {
	r := &Registrar{chains: map[string]*Support{}}
	for _, c := range chains {
		r.chains[c.ChannelID()] = c
	}
	return r
}

// GetChain returns the channel, or nil if the orderer does not serve it.
func (r *Registrar) GetChain(id string) *Support { return r.chains[id] }

// Chains lists the channels.
func (r *Registrar) Chains() []*Support {
	out := make([]*Support, 0, len(r.chains))
	for _, c := range r.chains {
		out = append(out, c)
	}
	return out
}
