// Package deliverclient receives a channel's blocks in order from a peer's
// Deliver service (full blocks, with the committer's validation flags) or an
// orderer's AtomicBroadcast.Deliver, and never skips one: a block number
// higher than expected (a gap) or a broken stream makes it re-request from
// the expected number; blocks it already has are ignored.
//
// It is used by cmd/blockwatch and by cmd/loadgen's setup phase.
package deliverclient

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"time"

	"google.golang.org/grpc"

	cb "fabricrepro/internal/protos/common"
	ab "fabricrepro/internal/protos/orderer"
	pb "fabricrepro/internal/protos/peer"
	"fabricrepro/internal/protoutil"
)

// Newest, as a start position, means the channel's newest block at the time
// the stream opens.
const Newest = math.MaxUint64

// Stream yields blocks of one Deliver session; Recv returns io.EOF (or an
// error) when the session ends.
type Stream interface {
	Recv() (*cb.Block, error)
}

// Source opens Deliver sessions that start at block start (or Newest). The
// session ends when ctx is cancelled.
type Source interface {
	Open(ctx context.Context, start uint64) (Stream, error)
}

// Options tune Watch.
type Options struct {
	// Start is the first block wanted (Newest: whatever block is newest when
	// the first stream opens).
	Start uint64
	// Stop is the last block wanted; Watch returns nil after delivering it.
	// math.MaxUint64 (NoStop) means until ctx ends.
	Stop uint64
	// Retry is the pause before re-opening a broken stream (default 100ms).
	Retry time.Duration
	// OnReconnect, if set, is told why a stream is re-opened and from where.
	OnReconnect func(expected uint64, reason error)
}

// NoStop as Options.Stop watches until the context ends.
const NoStop = math.MaxUint64

// ErrGap is the reason given to OnReconnect when a block arrived with a
// higher number than expected.
var ErrGap = errors.New("gap in block numbers")

// Watch delivers each block from opt.Start to opt.Stop exactly once and in
// order to onBlock, with the time it arrived. It returns nil after opt.Stop,
// ctx's error when ctx ends first, or onBlock's error.
func Watch(ctx context.Context, src Source, opt Options, onBlock func(b *cb.Block, arrival time.Time) error) error {
	if opt.Retry <= 0 {
		opt.Retry = 100 * time.Millisecond
	}
	expected := opt.Start
	for {
		reason := session(ctx, src, &expected, opt.Stop, onBlock)
		if reason == nil {
			return nil
		}
		var cbErr callbackError
		if errors.As(reason, &cbErr) {
			return cbErr.err
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if opt.OnReconnect != nil {
			opt.OnReconnect(expected, reason)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(opt.Retry):
		}
	}
}

type callbackError struct{ err error }

func (c callbackError) Error() string { return c.err.Error() }

// session runs one stream; it returns nil when stop was delivered, else why
// the stream has to be re-opened.
func session(ctx context.Context, src Source, expected *uint64, stop uint64, onBlock func(*cb.Block, time.Time) error) error {
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	st, err := src.Open(sctx, *expected)
	if err != nil {
		return fmt.Errorf("open deliver stream: %w", err)
	}
	for {
		b, err := st.Recv()
		arrival := time.Now()
		if err != nil {
			if err == io.EOF {
				return errors.New("deliver stream ended")
			}
			return err
		}
		if b == nil || b.Header == nil {
			return errors.New("deliver stream sent a block without header")
		}
		n := b.Header.Number
		if *expected == Newest {
			*expected = n // the first block of a Newest session sets the start
		}
		switch {
		case n < *expected:
			continue // a block we already have
		case n > *expected:
			return fmt.Errorf("%w: got block %d, expected %d", ErrGap, n, *expected)
		}
		if err := onBlock(b, arrival); err != nil {
			return callbackError{err}
		}
		if n >= stop {
			return nil
		}
		*expected = n + 1
	}
}

// ValidCount returns how many transactions of b are valid: the entries of
// its TRANSACTIONS_FILTER metadata equal to 0 (TxValidationCode VALID). A
// block without a filter (as the orderer delivers them) counts every
// transaction as valid.
func ValidCount(b *cb.Block) int {
	n := 0
	if b.Data != nil {
		n = len(b.Data.Data)
	}
	if b.Metadata == nil || len(b.Metadata.Metadata) <= int(cb.BlockMetadataIndex_TRANSACTIONS_FILTER) {
		return n
	}
	filter := b.Metadata.Metadata[cb.BlockMetadataIndex_TRANSACTIONS_FILTER]
	if len(filter) == 0 {
		return n
	}
	valid := 0
	for i := 0; i < n && i < len(filter); i++ {
		if filter[i] == byte(pb.TxValidationCode_VALID) {
			valid++
		}
	}
	return valid
}

// SeekEnvelope is the signed DELIVER_SEEK_INFO envelope asking for blocks
// start..stop of channel, waiting for blocks not yet cut.
func SeekEnvelope(channel string, signer protoutil.Signer, start, stop uint64) (*cb.Envelope, error) {
	pos := func(n uint64) *ab.SeekPosition {
		if n == Newest {
			return &ab.SeekPosition{Type: &ab.SeekPosition_Newest{Newest: &ab.SeekNewest{}}}
		}
		return &ab.SeekPosition{Type: &ab.SeekPosition_Specified{Specified: &ab.SeekSpecified{Number: n}}}
	}
	stopPos := pos(stop)
	if stop == NoStop {
		stopPos = &ab.SeekPosition{Type: &ab.SeekPosition_Specified{Specified: &ab.SeekSpecified{Number: math.MaxUint64}}}
	}
	return protoutil.SignedEnvelope(cb.HeaderType_DELIVER_SEEK_INFO, channel, signer,
		&ab.SeekInfo{Start: pos(start), Stop: stopPos, Behavior: ab.SeekInfo_BLOCK_UNTIL_READY})
}

// MaxRecvMsgSize is the largest block the gRPC sources accept (Fabric's
// default maximum message size is 100 MB).
const MaxRecvMsgSize = 100 * 1024 * 1024

// PeerSource opens sessions on a peer's Deliver service (full blocks).
type PeerSource struct {
	Conn    grpc.ClientConnInterface
	Channel string
	Signer  protoutil.Signer
	Stop    uint64 // forwarded into the SeekInfo
}

// Open implements Source.
func (p *PeerSource) Open(ctx context.Context, start uint64) (Stream, error) {
	env, err := SeekEnvelope(p.Channel, p.Signer, start, p.Stop)
	if err != nil {
		return nil, err
	}
	st, err := pb.NewDeliverClient(p.Conn).Deliver(ctx, grpc.MaxCallRecvMsgSize(MaxRecvMsgSize))
	if err != nil {
		return nil, err
	}
	if err := st.Send(env); err != nil {
		return nil, err
	}
	return recvFunc(func() (*cb.Block, error) {
		r, err := st.Recv()
		if err != nil {
			return nil, err
		}
		switch t := r.Type.(type) {
		case *pb.DeliverResponse_Block:
			return t.Block, nil
		case *pb.DeliverResponse_Status:
			return nil, fmt.Errorf("deliver ended with status %s", t.Status)
		default:
			return nil, fmt.Errorf("unexpected deliver response %T", r.Type)
		}
	}), nil
}

// OrdererSource opens sessions on an orderer's AtomicBroadcast.Deliver.
type OrdererSource struct {
	Conn    grpc.ClientConnInterface
	Channel string
	Signer  protoutil.Signer
	Stop    uint64
}

// Open implements Source.
func (o *OrdererSource) Open(ctx context.Context, start uint64) (Stream, error) {
	env, err := SeekEnvelope(o.Channel, o.Signer, start, o.Stop)
	if err != nil {
		return nil, err
	}
	st, err := ab.NewAtomicBroadcastClient(o.Conn).Deliver(ctx, grpc.MaxCallRecvMsgSize(MaxRecvMsgSize))
	if err != nil {
		return nil, err
	}
	if err := st.Send(env); err != nil {
		return nil, err
	}
	return recvFunc(func() (*cb.Block, error) {
		r, err := st.Recv()
		if err != nil {
			return nil, err
		}
		switch t := r.Type.(type) {
		case *ab.DeliverResponse_Block:
			return t.Block, nil
		case *ab.DeliverResponse_Status:
			return nil, fmt.Errorf("deliver ended with status %s", t.Status)
		default:
			return nil, fmt.Errorf("unexpected deliver response %T", r.Type)
		}
	}), nil
}

type recvFunc func() (*cb.Block, error)

func (f recvFunc) Recv() (*cb.Block, error) { return f() }
