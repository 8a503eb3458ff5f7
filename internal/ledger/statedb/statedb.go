// Package statedb defines the world-state database that the endorser reads
// while simulating and the committer validates against and updates. Each
// implementation (LevelDB for Fabric 1.2; later FastFabric's hash table) is a
// switch behind this interface.
package statedb

import "fmt"

// Height is a version: the block and transaction that last wrote a key, as
// Fabric's version.Height.
type Height struct {
	BlockNum uint64
	TxNum    uint64
}

// Compare orders heights: -1, 0 or 1.
func (h Height) Compare(o Height) int {
	switch {
	case h.BlockNum < o.BlockNum:
		return -1
	case h.BlockNum > o.BlockNum:
		return 1
	case h.TxNum < o.TxNum:
		return -1
	case h.TxNum > o.TxNum:
		return 1
	}
	return 0
}

func (h Height) String() string { return fmt.Sprintf("%d:%d", h.BlockNum, h.TxNum) }

// VersionedValue is a value with the version that wrote it.
type VersionedValue struct {
	Value   []byte
	Version Height
}

// Write is one key's update in a batch; Delete removes the key.
type Write struct {
	Namespace string
	Key       string
	Value     []byte
	Delete    bool
	Version   Height
}

// UpdateBatch is the set of writes of one block's valid transactions, in
// order; later writes to the same key win.
type UpdateBatch struct {
	Writes []Write
}

// Put adds a write.
func (b *UpdateBatch) Put(ns, key string, value []byte, v Height) {
	b.Writes = append(b.Writes, Write{Namespace: ns, Key: key, Value: value, Version: v})
}

// Delete adds a delete.
func (b *UpdateBatch) Delete(ns, key string, v Height) {
	b.Writes = append(b.Writes, Write{Namespace: ns, Key: key, Delete: true, Version: v})
}

// DB is a versioned key-value world state.
type DB interface {
	// GetState returns the committed value of ns/key, or nil if absent.
	GetState(ns, key string) (*VersionedValue, error)
	// ApplyUpdates atomically applies batch and records savepoint as the last
	// committed block height.
	ApplyUpdates(batch *UpdateBatch, savepoint Height) error
	// Savepoint returns the height of the last applied batch (ok=false if none).
	Savepoint() (Height, bool, error)
	Close() error
}
