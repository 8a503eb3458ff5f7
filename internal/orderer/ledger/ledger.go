// Package ledger is the orderer's block store, with Fabric 1.2's two
// flavours behind one interface: a RAM ledger (a bounded ring of the newest
// blocks, Fabric's common/ledger/blockledger/ram) and a file ledger (an
// append-only file of length-prefixed blocks, synced per block as Fabric's
// block files are, with an in-memory index rebuilt on reopen).
//
// Both share Fabric's iterator semantics: Oldest and Newest start at the
// oldest kept and newest block; Specified{N} starts at N and fails with
// NOT_FOUND when N is beyond the height (or no longer kept); N equal to the
// height waits for the next block.
package ledger

import (
	"context"
	"errors"
	"sync"

	cb "fabricrepro/internal/protos/common"
	ab "fabricrepro/internal/protos/orderer"
)

// Ledger is an orderer's chain of blocks for one channel.
type Ledger interface {
	// Height is the number of the next block to append.
	Height() uint64
	// Append adds the next block; its number must equal Height.
	Append(block *cb.Block) error
	// Block returns block n, or an error if it is not (or no longer) kept.
	Block(n uint64) (*cb.Block, error)
	// Iterator returns an iterator positioned at start and the number of the
	// first block it will return.
	Iterator(start *ab.SeekPosition) (Iterator, uint64)
	// Close releases the ledger and wakes every waiting iterator.
	Close() error
}

// Iterator walks blocks in order, waiting for blocks not yet written.
type Iterator interface {
	// Next returns the next block, waiting until it exists. The status is
	// SUCCESS, NOT_FOUND if the block cannot be served, or
	// SERVICE_UNAVAILABLE if ctx ends or the ledger closes first.
	Next(ctx context.Context) (*cb.Block, cb.Status)
	// Close releases the iterator.
	Close()
}

// ErrClosed is returned by a closed ledger.
var ErrClosed = errors.New("ledger closed")

// notifier lets iterators wait for the next append without polling: every
// append closes the current channel and makes a new one.
type notifier struct {
	mu     sync.Mutex
	signal chan struct{}
	closed chan struct{}
}

func newNotifier() *notifier {
	return &notifier{signal: make(chan struct{}), closed: make(chan struct{})}
}

// wait returns a channel that is closed at the next append.
func (n *notifier) wait() <-chan struct{} {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.signal
}

func (n *notifier) notify() {
	n.mu.Lock()
	close(n.signal)
	n.signal = make(chan struct{})
	n.mu.Unlock()
}

func (n *notifier) close() {
	n.mu.Lock()
	defer n.mu.Unlock()
	select {
	case <-n.closed:
	default:
		close(n.closed)
	}
}

// store is what the shared iterator needs from a ledger.
type store interface {
	Height() uint64
	Block(n uint64) (*cb.Block, error)
	oldest() uint64
	notifier() *notifier
}

// startPosition resolves a seek position against s the way Fabric's ledgers
// do. ok is false when the position cannot be served (NOT_FOUND).
func startPosition(s store, start *ab.SeekPosition) (n uint64, ok bool) {
	height := s.Height()
	switch t := start.GetType().(type) {
	case *ab.SeekPosition_Oldest:
		return s.oldest(), true
	case *ab.SeekPosition_Newest:
		if height == 0 {
			return 0, true
		}
		return height - 1, true
	case *ab.SeekPosition_Specified:
		n := t.Specified.GetNumber()
		if n > height || n < s.oldest() {
			return 0, false
		}
		return n, true
	default:
		return 0, false
	}
}

type iterator struct {
	s    store
	next uint64
	bad  bool // the start position could not be served
}

func newIterator(s store, start *ab.SeekPosition) (Iterator, uint64) {
	n, ok := startPosition(s, start)
	if !ok {
		return &iterator{s: s, bad: true}, 0
	}
	return &iterator{s: s, next: n}, n
}

func (it *iterator) Next(ctx context.Context) (*cb.Block, cb.Status) {
	if it.bad {
		return nil, cb.Status_NOT_FOUND
	}
	nt := it.s.notifier()
	for {
		// Take the signal channel before reading the height so an append
		// between the two cannot be missed.
		signal := nt.wait()
		if it.next < it.s.Height() {
			b, err := it.s.Block(it.next)
			if err != nil {
				// The ring overwrote it while this reader lagged.
				return nil, cb.Status_NOT_FOUND
			}
			it.next++
			return b, cb.Status_SUCCESS
		}
		select {
		case <-signal:
		case <-nt.closed:
			return nil, cb.Status_SERVICE_UNAVAILABLE
		case <-ctx.Done():
			return nil, cb.Status_SERVICE_UNAVAILABLE
		}
	}
}

func (it *iterator) Close() {}
