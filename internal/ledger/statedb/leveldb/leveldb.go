// Package leveldb is Fabric 1.2's world state on LevelDB (stateleveldb): one
// goleveldb database whose keys are namespace 0x00 key and whose values carry
// the writing transaction's height in front of the value. It is the baseline
// implementation of statedb.DB; FastFabric's hash table replaces it behind the
// same interface.
package leveldb

import (
	"errors"
	"fmt"

	"github.com/syndtr/goleveldb/leveldb"
	"github.com/syndtr/goleveldb/leveldb/opt"

	"fabricrepro/internal/ledger/statedb"
)

// savepointKey holds the height of the last applied block. It starts with
// 0x00 so it can never collide with a namespace (namespaces are non-empty).
var savepointKey = []byte{0x00}

// Options tune the database. Sync mirrors Fabric, which writes each block's
// state batch with sync=true.
type Options struct {
	Sync bool
}

// DefaultOptions are Fabric 1.2's settings.
var DefaultOptions = Options{Sync: true}

// DB is a statedb.DB on goleveldb.
type DB struct {
	db   *leveldb.DB
	sync bool
}

var _ statedb.DB = (*DB)(nil)

// Open opens (creating if needed) the state database in dir.
func Open(dir string, o Options) (*DB, error) {
	db, err := leveldb.OpenFile(dir, nil)
	if err != nil {
		return nil, fmt.Errorf("statedb: open %s: %w", dir, err)
	}
	return &DB{db: db, sync: o.Sync}, nil
}

func compositeKey(ns, key string) []byte {
	k := make([]byte, 0, len(ns)+1+len(key))
	k = append(k, ns...)
	k = append(k, 0x00)
	return append(k, key...)
}

// GetState returns the committed value of ns/key, or nil if absent.
func (d *DB) GetState(ns, key string) (*statedb.VersionedValue, error) {
	raw, err := d.db.Get(compositeKey(ns, key), nil)
	if errors.Is(err, leveldb.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("statedb: get %s/%s: %w", ns, key, err)
	}
	return decodeValue(raw)
}

// ApplyUpdates writes the batch and the savepoint in one LevelDB batch, so a
// crash leaves either the whole block's state or none of it.
func (d *DB) ApplyUpdates(batch *statedb.UpdateBatch, savepoint statedb.Height) error {
	b := new(leveldb.Batch)
	if batch != nil {
		for _, w := range batch.Writes {
			k := compositeKey(w.Namespace, w.Key)
			if w.Delete {
				b.Delete(k)
			} else {
				b.Put(k, encodeValue(w.Value, w.Version))
			}
		}
	}
	b.Put(savepointKey, EncodeHeight(savepoint))
	if err := d.db.Write(b, &opt.WriteOptions{Sync: d.sync}); err != nil {
		return fmt.Errorf("statedb: apply block %d: %w", savepoint.BlockNum, err)
	}
	return nil
}

// Savepoint returns the height of the last applied batch.
func (d *DB) Savepoint() (statedb.Height, bool, error) {
	raw, err := d.db.Get(savepointKey, nil)
	if errors.Is(err, leveldb.ErrNotFound) {
		return statedb.Height{}, false, nil
	}
	if err != nil {
		return statedb.Height{}, false, err
	}
	h, _, err := DecodeHeight(raw)
	return h, err == nil, err
}

// Close closes the database.
func (d *DB) Close() error { return d.db.Close() }

func encodeValue(v []byte, h statedb.Height) []byte {
	out := EncodeHeight(h)
	return append(out, v...)
}

func decodeValue(raw []byte) (*statedb.VersionedValue, error) {
	h, n, err := DecodeHeight(raw)
	if err != nil {
		return nil, err
	}
	return &statedb.VersionedValue{Value: append([]byte{}, raw[n:]...), Version: h}, nil
}

// EncodeHeight is Fabric's version.Height.ToBytes: the block and transaction
// numbers, each as an order-preserving variable-length integer.
func EncodeHeight(h statedb.Height) []byte {
	return append(EncodeOrderPreservingVarUint64(h.BlockNum), EncodeOrderPreservingVarUint64(h.TxNum)...)
}

// DecodeHeight decodes EncodeHeight's output and returns the bytes consumed.
func DecodeHeight(b []byte) (statedb.Height, int, error) {
	bn, n1, err := DecodeOrderPreservingVarUint64(b)
	if err != nil {
		return statedb.Height{}, 0, err
	}
	tn, n2, err := DecodeOrderPreservingVarUint64(b[n1:])
	if err != nil {
		return statedb.Height{}, 0, err
	}
	return statedb.Height{BlockNum: bn, TxNum: tn}, n1 + n2, nil
}

// EncodeOrderPreservingVarUint64 is Fabric's util encoding: one length byte
// followed by the big-endian bytes of the number without leading zeros, so
// that byte order equals numeric order.
func EncodeOrderPreservingVarUint64(n uint64) []byte {
	var buf [8]byte
	for i := 0; i < 8; i++ {
		buf[7-i] = byte(n >> (8 * i))
	}
	i := 0
	for i < 8 && buf[i] == 0 {
		i++
	}
	return append([]byte{byte(8 - i)}, buf[i:]...)
}

// DecodeOrderPreservingVarUint64 decodes EncodeOrderPreservingVarUint64.
func DecodeOrderPreservingVarUint64(b []byte) (uint64, int, error) {
	if len(b) == 0 || int(b[0]) > 8 || len(b) < 1+int(b[0]) {
		return 0, 0, errors.New("statedb: malformed order-preserving integer")
	}
	var n uint64
	for _, c := range b[1 : 1+int(b[0])] {
		n = n<<8 | uint64(c)
	}
	return n, 1 + int(b[0]), nil
}
