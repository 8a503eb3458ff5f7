// Package history is Fabric 1.2's history database (historyleveldb): for
// every key written by a valid transaction it stores one empty-valued LevelDB
// entry ns 0x00 key 0x00 blockNum txNum, so the writes of a key can be listed
// in commit order with a prefix scan and looked up in the block store.
package history

import (
	"errors"
	"fmt"

	"github.com/syndtr/goleveldb/leveldb"
	"github.com/syndtr/goleveldb/leveldb/opt"
	"github.com/syndtr/goleveldb/leveldb/util"

	"fabricrepro/internal/ledger/statedb"
	sdb "fabricrepro/internal/ledger/statedb/leveldb"
)

var savepointKey = []byte{0x00, 's'}

// Write is one key written by a valid transaction.
type Write struct {
	Namespace string
	Key       string
	TxNum     uint64
}

// DB is the history database.
type DB struct {
	db   *leveldb.DB
	sync bool
}

// Open opens (creating if needed) the history database in dir. sync makes
// each block's batch durable before Commit returns, as Fabric does.
func Open(dir string, sync bool) (*DB, error) {
	db, err := leveldb.OpenFile(dir, nil)
	if err != nil {
		return nil, fmt.Errorf("history: open %s: %w", dir, err)
	}
	return &DB{db: db, sync: sync}, nil
}

func prefix(ns, key string) []byte {
	k := make([]byte, 0, len(ns)+len(key)+2)
	k = append(k, ns...)
	k = append(k, 0x00)
	k = append(k, key...)
	return append(k, 0x00)
}

// Commit records the writes of block blockNum's valid transactions and the
// block as the savepoint, in one batch.
func (d *DB) Commit(blockNum uint64, writes []Write) error {
	b := new(leveldb.Batch)
	for _, w := range writes {
		k := prefix(w.Namespace, w.Key)
		k = append(k, sdb.EncodeOrderPreservingVarUint64(blockNum)...)
		k = append(k, sdb.EncodeOrderPreservingVarUint64(w.TxNum)...)
		b.Put(k, nil)
	}
	b.Put(savepointKey, sdb.EncodeHeight(statedb.Height{BlockNum: blockNum}))
	if err := d.db.Write(b, &opt.WriteOptions{Sync: d.sync}); err != nil {
		return fmt.Errorf("history: commit block %d: %w", blockNum, err)
	}
	return nil
}

// Savepoint is the last committed block (ok=false if none).
func (d *DB) Savepoint() (uint64, bool, error) {
	raw, err := d.db.Get(savepointKey, nil)
	if errors.Is(err, leveldb.ErrNotFound) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, err
	}
	h, _, err := sdb.DecodeHeight(raw)
	return h.BlockNum, err == nil, err
}

// KeyHistory lists the heights at which ns/key was written, oldest first.
func (d *DB) KeyHistory(ns, key string) ([]statedb.Height, error) {
	p := prefix(ns, key)
	it := d.db.NewIterator(util.BytesPrefix(p), nil)
	defer it.Release()
	var out []statedb.Height
	for it.Next() {
		h, _, err := sdb.DecodeHeight(it.Key()[len(p):])
		if err != nil {
			return nil, err
		}
		out = append(out, h)
	}
	return out, it.Error()
}

// Close closes the database.
func (d *DB) Close() error { return d.db.Close() }
