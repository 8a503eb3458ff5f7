// Package blockcutter batches ordered envelopes into blocks with the rules of
// Fabric 1.2's orderer/common/blockcutter: a message larger than
// PreferredMaxBytes goes into a batch of its own, the pending batch is cut
// before a message that would push it past PreferredMaxBytes, and a batch is
// cut as soon as it holds MaxMessageCount messages. The batch timeout is the
// consenter's job (it owns the timer), exactly as in Fabric.
package blockcutter

import (
	cb "fabricrepro/internal/protos/common"
)

// Config is the subset of the channel's BatchSize the cutter needs.
type Config struct {
	MaxMessageCount   uint32
	PreferredMaxBytes uint32
}

// CutReason says why a batch was cut; it feeds the orderer's metrics.
type CutReason int

// The reasons a batch is cut.
const (
	CutCount    CutReason = iota // MaxMessageCount reached
	CutBytes                     // the next message would overflow PreferredMaxBytes
	CutIsolated                  // the message alone exceeds PreferredMaxBytes
	CutTimeout                   // BatchTimeout expired (reported by the consenter)
	CutForced                    // an explicit Cut, e.g. before a config block
)

// String names the reason for metric labels.
func (r CutReason) String() string {
	switch r {
	case CutCount:
		return "count"
	case CutBytes:
		return "bytes"
	case CutIsolated:
		return "isolated"
	case CutTimeout:
		return "timeout"
	default:
		return "forced"
	}
}

// Batch is a cut batch with the reason it was cut.
type Batch struct {
	Envelopes []*cb.Envelope
	Reason    CutReason
}

// Receiver holds the pending batch. It is not safe for concurrent use: as in
// Fabric, only the consenter's single goroutine calls it.
type Receiver struct {
	config       func() Config // read per message so a config change applies at once
	pending      []*cb.Envelope
	pendingBytes uint32
}

// New returns a Receiver that reads its limits from config on every message.
func New(config func() Config) *Receiver { return &Receiver{config: config} }

// MessageSize is Fabric's size of an envelope for batching and the size
// filter: payload plus signature, without protobuf framing.
func MessageSize(env *cb.Envelope) uint32 { return uint32(len(env.Payload) + len(env.Signature)) }

// Ordered adds msg to the pending batch and returns the zero, one or two
// batches that this cut. pending reports whether a batch is still pending
// afterwards, so the caller knows whether its timer must run.
func (r *Receiver) Ordered(msg *cb.Envelope) (batches []Batch, pending bool) {
	cfg := r.config()
	size := MessageSize(msg)

	if size > cfg.PreferredMaxBytes {
		// Isolate an oversized message: cut what is pending, then the
		// message alone.
		if len(r.pending) > 0 {
			batches = append(batches, Batch{Envelopes: r.Cut(), Reason: CutIsolated})
		}
		batches = append(batches, Batch{Envelopes: []*cb.Envelope{msg}, Reason: CutIsolated})
		return batches, false
	}

	if r.pendingBytes+size > cfg.PreferredMaxBytes {
		batches = append(batches, Batch{Envelopes: r.Cut(), Reason: CutBytes})
	}

	r.pending = append(r.pending, msg)
	r.pendingBytes += size

	if uint32(len(r.pending)) >= cfg.MaxMessageCount {
		batches = append(batches, Batch{Envelopes: r.Cut(), Reason: CutCount})
	}
	return batches, len(r.pending) > 0
}

// Cut returns the pending batch (nil if empty) and starts a new one.
func (r *Receiver) Cut() []*cb.Envelope {
	batch := r.pending
	r.pending = nil
	r.pendingBytes = 0
	return batch
}

// Pending returns the number of messages waiting in the current batch.
func (r *Receiver) Pending() int { return len(r.pending) }
