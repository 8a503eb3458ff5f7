package ledger

import (
	"fmt"
	"sync"

	cb "fabricrepro/internal/protos/common"
	ab "fabricrepro/internal/protos/orderer"
)

// DefaultRAMSize is the reference build's default number of blocks a RAM
// ledger keeps. Fabric's sample orderer.yaml keeps 1000; FastFabric's orderer
// kept every block of a run in memory, so the default holds a whole run
// (100,000 blocks; memory grows only with the blocks actually written).
const DefaultRAMSize = 100000

// RAM keeps the newest size blocks in a ring, as Fabric's RAM ledger does.
type RAM struct {
	mu     sync.RWMutex
	size   uint64
	ring   []*cb.Block // grows up to size, then wraps
	height uint64
	first  uint64 // number of the oldest kept block
	n      *notifier
	closed bool
}

// NewRAM returns an empty RAM ledger keeping at most size blocks.
func NewRAM(size int) *RAM {
	if size <= 0 {
		size = DefaultRAMSize
	}
	return &RAM{size: uint64(size), n: newNotifier()}
}

// Height implements Ledger.
func (r *RAM) Height() uint64 {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.height
}

// Append implements Ledger.
func (r *RAM) Append(block *cb.Block) error {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return ErrClosed
	}
	if block.GetHeader().GetNumber() != r.height {
		r.mu.Unlock()
		return fmt.Errorf("block number %d does not follow height %d", block.GetHeader().GetNumber(), r.height)
	}
	if uint64(len(r.ring)) < r.size {
		r.ring = append(r.ring, block)
	} else {
		r.ring[r.height%r.size] = block
		r.first = r.height - r.size + 1
	}
	r.height++
	r.mu.Unlock()
	r.n.notify()
	return nil
}

// Block implements Ledger.
func (r *RAM) Block(n uint64) (*cb.Block, error) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if n >= r.height || n < r.first {
		return nil, fmt.Errorf("block %d not kept (oldest %d, height %d)", n, r.first, r.height)
	}
	return r.ring[n%r.size], nil
}

// Iterator implements Ledger.
func (r *RAM) Iterator(start *ab.SeekPosition) (Iterator, uint64) { return newIterator(r, start) }

// Close implements Ledger.
func (r *RAM) Close() error {
	r.mu.Lock()
	r.closed = true
	r.mu.Unlock()
	r.n.close()
	return nil
}

func (r *RAM) oldest() uint64 {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.first
}

func (r *RAM) notifier() *notifier { return r.n }
