// Package consensus defines what a consenter is to the rest of the orderer,
// following Fabric 1.2's orderer/consensus: broadcast hands it validated
// envelopes with Order, and it turns them into blocks through the channel's
// Support (block cutter, block creation, block writing). Solo lives in
// consensus/solo; Kafka and BFT-SMaRt consenters plug in here later.
package consensus

import (
	"time"

	"fabricrepro/internal/orderer/blockcutter"
	cb "fabricrepro/internal/protos/common"
)

// Consenter creates the consensus chain of a channel.
type Consenter interface {
	HandleChain(support Support) (Chain, error)
}

// Chain orders the messages of one channel.
type Chain interface {
	// Order accepts a validated normal message checked against config
	// sequence configSeq; an error means it was not accepted (shutdown).
	Order(env *cb.Envelope, configSeq uint64) error
	// WaitReady blocks until the chain can accept messages (Fabric's
	// back-pressure hook); solo is always ready.
	WaitReady() error
	// Errored is closed when the chain stops serving (halt or failure), so
	// Deliver streams can end.
	Errored() <-chan struct{}
	// Start begins ordering.
	Start()
	// Halt stops ordering and waits until the last block is written.
	Halt()
}

// Support is what a chain needs from its channel.
type Support interface {
	// ChannelID names the channel.
	ChannelID() string
	// Sequence is the channel's current config sequence.
	Sequence() uint64
	// BatchTimeout is the channel's BatchTimeout.
	BatchTimeout() time.Duration
	// BlockCutter is the channel's batching state.
	BlockCutter() *blockcutter.Receiver
	// ProcessNormalMsg re-validates a message whose config sequence is stale.
	ProcessNormalMsg(env *cb.Envelope) (configSeq uint64, err error)
	// CreateNextBlock builds the block after the last one written.
	CreateNextBlock(batch []*cb.Envelope) *cb.Block
	// WriteBlock signs and appends block; it may return before the block is
	// on the ledger (Fabric 1.2 commits asynchronously) but blocks are
	// written in order. reason is recorded in metrics.
	WriteBlock(block *cb.Block, reason blockcutter.CutReason)
	// Flush waits until every block passed to WriteBlock is on the ledger.
	Flush()
}
