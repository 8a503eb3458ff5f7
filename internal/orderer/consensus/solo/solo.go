// Package solo is Fabric 1.2's solo consenter: a single goroutine receives
// validated envelopes over a channel, feeds them to the block cutter, and
// writes each cut batch as the next block. A timer started with the first
// message of a pending batch cuts it after BatchTimeout.
package solo

import (
	"errors"
	"log"
	"time"

	"fabricrepro/internal/orderer/blockcutter"
	"fabricrepro/internal/orderer/consensus"
	cb "fabricrepro/internal/protos/common"
)

// Consenter creates solo chains.
type Consenter struct{}

// New returns the solo consenter.
func New() consensus.Consenter { return Consenter{} }

// HandleChain implements consensus.Consenter.
func (Consenter) HandleChain(support consensus.Support) (consensus.Chain, error) {
	return &chain{support: support, sendChan: make(chan *message), exitChan: make(chan struct{}), doneChan: make(chan struct{})}, nil
}

type message struct {
	configSeq uint64
	env       *cb.Envelope
}

type chain struct {
	support  consensus.Support
	sendChan chan *message // unbuffered, as in Fabric: Order returns once main took the message
	exitChan chan struct{}
	doneChan chan struct{} // closed when main has returned
}

// ErrHalted is returned by Order after Halt.
var ErrHalted = errors.New("solo chain is halted")

func (ch *chain) Start() { go ch.main() }

func (ch *chain) Halt() {
	select {
	case <-ch.exitChan:
	default:
		close(ch.exitChan)
	}
	<-ch.doneChan
}

func (ch *chain) WaitReady() error { return nil }

func (ch *chain) Errored() <-chan struct{} { return ch.exitChan }

// Order hands env to the ordering goroutine.
func (ch *chain) Order(env *cb.Envelope, configSeq uint64) error {
	select {
	case ch.sendChan <- &message{configSeq: configSeq, env: env}:
		return nil
	case <-ch.exitChan:
		return ErrHalted
	}
}

func (ch *chain) main() {
	defer close(ch.doneChan)
	var timer <-chan time.Time
	cutter := ch.support.BlockCutter()
	write := func(batch []*cb.Envelope, reason blockcutter.CutReason) {
		ch.support.WriteBlock(ch.support.CreateNextBlock(batch), reason)
	}
	for {
		seq := ch.support.Sequence()
		select {
		case msg := <-ch.sendChan:
			if msg.configSeq < seq {
				// The config changed since broadcast checked the message.
				if _, err := ch.support.ProcessNormalMsg(msg.env); err != nil {
					log.Printf("[channel: %s] discarding bad normal message: %v", ch.support.ChannelID(), err)
					continue
				}
			}
			batches, pending := cutter.Ordered(msg.env)
			for _, b := range batches {
				write(b.Envelopes, b.Reason)
			}
			// Run the timer exactly while a batch is pending. (Fabric 1.2
			// cleared it whenever a batch was cut, even if a message stayed
			// pending, leaving that message waiting for the next one; later
			// Fabric releases fixed this, and so do we.)
			switch {
			case timer != nil && !pending:
				timer = nil
			case timer == nil && pending:
				timer = time.After(ch.support.BatchTimeout())
			}
		case <-timer:
			timer = nil
			batch := cutter.Cut()
			if len(batch) == 0 {
				log.Printf("[channel: %s] batch timer expired with no pending requests, this might indicate a bug", ch.support.ChannelID())
				continue
			}
			write(batch, blockcutter.CutTimeout)
		case <-ch.exitChan:
			return
		}
	}
}
