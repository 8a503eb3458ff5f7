// Package blkstorage is Fabric 1.2's file block store (fsblkstorage): blocks,
// with their TRANSACTIONS_FILTER validation flags, are appended to numbered
// segment files (blockfile_000000, ...) as a varint length followed by the
// marshaled block, and indexed in LevelDB by block number and transaction ID.
// On restart the index is brought up to date from the files, so a crash
// between the file append and the index write loses nothing.
package blkstorage

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"

	"github.com/syndtr/goleveldb/leveldb"
	"github.com/syndtr/goleveldb/leveldb/opt"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"fabricrepro/internal/protos/common"
	"fabricrepro/internal/protoutil"
)

// BlockStore is what the committer appends to and the deliver service reads
// from. FastFabric's storage offload replaces it behind this interface.
type BlockStore interface {
	// AddBlock appends the next block (number == Height()).
	AddBlock(block *common.Block) error
	// Height is the number of blocks stored (the next block's number).
	Height() uint64
	// BlockByNumber returns a stored block.
	BlockByNumber(n uint64) (*common.Block, error)
	// TxByID locates a transaction by ID.
	TxByID(txID string) (*TxLoc, error)
	// TxIDExists reports whether a transaction with this ID was stored
	// (valid or not), for the committer's duplicate check.
	TxIDExists(txID string) (bool, error)
	// WaitForHeight blocks until Height() > n or ctx is done.
	WaitForHeight(ctx context.Context, n uint64) error
	Close() error
}

// TxLoc is where a transaction lives and what the committer decided about it.
type TxLoc struct {
	BlockNum       uint64
	TxNum          uint64
	ValidationCode uint8
	Envelope       []byte // the marshaled envelope
}

// ErrNotFound is returned for a block or transaction that is not stored.
var ErrNotFound = errors.New("blkstorage: not found")

// Options configure the store.
type Options struct {
	// MaxFileSize is the segment size after which a new file is started
	// (Fabric's default: 64 MiB).
	MaxFileSize int64
	// Sync fsyncs the segment file after each block, as Fabric does.
	Sync bool
}

// DefaultOptions are Fabric 1.2's.
var DefaultOptions = Options{MaxFileSize: 64 << 20, Sync: true}

// Index keys. Block numbers are 8-byte big-endian so they sort.
var (
	checkpointKey = []byte("blkMgrInfo")
	blockNumPfx   = byte('n')
	txIDPfx       = byte('t')
)

// checkpoint is what was last written: current file, its size and height.
type checkpoint struct {
	file   uint64
	offset uint64
	height uint64
}

func (c checkpoint) bytes() []byte {
	b := make([]byte, 24)
	binary.BigEndian.PutUint64(b, c.file)
	binary.BigEndian.PutUint64(b[8:], c.offset)
	binary.BigEndian.PutUint64(b[16:], c.height)
	return b
}

// FileStore is the file-based BlockStore.
type FileStore struct {
	dir  string
	opts Options
	idx  *leveldb.DB

	mu       sync.RWMutex
	cp       checkpoint
	lastHash []byte // header hash of the last block, to check chaining
	f        *os.File
	notify   chan struct{} // closed and replaced on every append
}

var _ BlockStore = (*FileStore)(nil)

// Open opens or creates a store in dir (segment files in dir, index in
// dir/index) and re-indexes blocks that reached the files but not the index.
func Open(dir string, o Options) (*FileStore, error) {
	if o.MaxFileSize <= 0 {
		o.MaxFileSize = DefaultOptions.MaxFileSize
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	idx, err := leveldb.OpenFile(filepath.Join(dir, "index"), nil)
	if err != nil {
		return nil, fmt.Errorf("blkstorage: open index: %w", err)
	}
	s := &FileStore{dir: dir, opts: o, idx: idx, notify: make(chan struct{})}
	if raw, err := idx.Get(checkpointKey, nil); err == nil && len(raw) == 24 {
		s.cp = checkpoint{binary.BigEndian.Uint64(raw), binary.BigEndian.Uint64(raw[8:]), binary.BigEndian.Uint64(raw[16:])}
	} else if err != nil && !errors.Is(err, leveldb.ErrNotFound) {
		idx.Close()
		return nil, err
	}
	if err := s.recover(); err != nil {
		idx.Close()
		return nil, err
	}
	f, err := os.OpenFile(s.path(s.cp.file), os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		idx.Close()
		return nil, err
	}
	// Drop a partially written block past the last complete one.
	if err := f.Truncate(int64(s.cp.offset)); err != nil {
		f.Close()
		idx.Close()
		return nil, err
	}
	if _, err := f.Seek(int64(s.cp.offset), io.SeekStart); err != nil {
		f.Close()
		idx.Close()
		return nil, err
	}
	s.f = f
	if s.cp.height > 0 {
		last, err := s.BlockByNumber(s.cp.height - 1)
		if err != nil {
			s.Close()
			return nil, err
		}
		s.lastHash = protoutil.BlockHeaderHash(last.Header)
	}
	return s, nil
}

func (s *FileStore) path(n uint64) string {
	return filepath.Join(s.dir, fmt.Sprintf("blockfile_%06d", n))
}

// recover scans from the checkpoint to the end of the segment files and
// indexes every complete block found there (Fabric's syncIndex).
func (s *FileStore) recover() error {
	for {
		f, err := os.Open(s.path(s.cp.file))
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		if _, err := f.Seek(int64(s.cp.offset), io.SeekStart); err != nil {
			f.Close()
			return err
		}
		r := bufio.NewReader(f)
		for {
			raw, n, err := readRecord(r)
			if err != nil { // EOF or a torn tail: stop at the last complete block
				break
			}
			b := &common.Block{}
			if err := proto.Unmarshal(raw, b); err != nil || b.Header == nil || b.Header.Number != s.cp.height {
				break
			}
			loc := s.cp
			s.cp.offset += uint64(n)
			s.cp.height++
			if err := s.index(b, loc, n); err != nil {
				f.Close()
				return err
			}
		}
		f.Close()
		if _, err := os.Stat(s.path(s.cp.file + 1)); err != nil {
			return nil
		}
		s.cp = checkpoint{file: s.cp.file + 1, offset: 0, height: s.cp.height}
	}
}

func readRecord(r *bufio.Reader) ([]byte, int, error) {
	l, err := binary.ReadUvarint(r)
	if err != nil {
		return nil, 0, err
	}
	if l > 1<<31 {
		return nil, 0, errors.New("record too large")
	}
	buf := make([]byte, l)
	if _, err := io.ReadFull(r, buf); err != nil {
		return nil, 0, err
	}
	return buf, len(protowire.AppendVarint(nil, l)) + int(l), nil
}

func blockKey(n uint64) []byte {
	k := make([]byte, 9)
	k[0] = blockNumPfx
	binary.BigEndian.PutUint64(k[1:], n)
	return k
}

// index writes the block-number and tx-ID entries of block b, stored at loc
// (the position before the block) with n bytes, plus the new checkpoint.
func (s *FileStore) index(b *common.Block, loc checkpoint, n int) error {
	batch := new(leveldb.Batch)
	v := make([]byte, 20)
	binary.BigEndian.PutUint64(v, loc.file)
	binary.BigEndian.PutUint64(v[8:], loc.offset)
	binary.BigEndian.PutUint32(v[16:], uint32(n))
	batch.Put(blockKey(b.Header.Number), v)
	flags := txFilter(b)
	for i, raw := range b.Data.GetData() {
		txID := envelopeTxID(raw)
		if txID == "" {
			continue
		}
		// Fabric 1.2 keeps the first occurrence of a tx ID; a later duplicate
		// is marked DUPLICATE_TXID by the validator anyway.
		k := append([]byte{txIDPfx}, txID...)
		if ok, _ := s.idx.Has(k, nil); ok {
			continue
		}
		tv := make([]byte, 17)
		binary.BigEndian.PutUint64(tv, b.Header.Number)
		binary.BigEndian.PutUint64(tv[8:], uint64(i))
		if i < len(flags) {
			tv[16] = flags[i]
		}
		batch.Put(k, tv)
	}
	batch.Put(checkpointKey, s.cp.bytes())
	return s.idx.Write(batch, &opt.WriteOptions{Sync: false})
}

func txFilter(b *common.Block) []byte {
	if b.Metadata == nil || len(b.Metadata.Metadata) <= int(common.BlockMetadataIndex_TRANSACTIONS_FILTER) {
		return nil
	}
	return b.Metadata.Metadata[common.BlockMetadataIndex_TRANSACTIONS_FILTER]
}

// envelopeTxID extracts the channel header's tx ID, "" if the envelope is
// malformed (such transactions are simply not indexed by ID, as in Fabric).
func envelopeTxID(raw []byte) string {
	env := &common.Envelope{}
	if err := proto.Unmarshal(raw, env); err != nil {
		return ""
	}
	_, chdr, _, err := protoutil.UnmarshalPayload(env)
	if err != nil {
		return ""
	}
	return chdr.TxId
}

// AddBlock appends block, which must be the next one and chain to the
// previous block's header hash.
func (s *FileStore) AddBlock(b *common.Block) error {
	if b == nil || b.Header == nil || b.Data == nil {
		return errors.New("blkstorage: block without header or data")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if b.Header.Number != s.cp.height {
		return fmt.Errorf("blkstorage: block number should have been %d but was %d", s.cp.height, b.Header.Number)
	}
	// Not essential, but cheap and catches an orderer bug (Fabric does it too).
	if !bytes.Equal(b.Header.PreviousHash, s.lastHash) {
		return fmt.Errorf("blkstorage: block %d: unexpected previous hash %x, want %x", b.Header.Number, b.Header.PreviousHash, s.lastHash)
	}
	raw, err := proto.Marshal(b)
	if err != nil {
		return err
	}
	rec := protowire.AppendVarint(make([]byte, 0, len(raw)+10), uint64(len(raw)))
	rec = append(rec, raw...)
	if s.cp.offset > 0 && int64(s.cp.offset)+int64(len(rec)) > s.opts.MaxFileSize {
		nf, err := os.OpenFile(s.path(s.cp.file+1), os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
		if err != nil {
			return err
		}
		s.f.Close()
		s.f = nf
		s.cp = checkpoint{file: s.cp.file + 1, offset: 0, height: s.cp.height}
	}
	if _, err := s.f.Write(rec); err != nil {
		s.f.Truncate(int64(s.cp.offset))
		s.f.Seek(int64(s.cp.offset), io.SeekStart)
		return fmt.Errorf("blkstorage: append block %d: %w", b.Header.Number, err)
	}
	if s.opts.Sync {
		if err := s.f.Sync(); err != nil {
			return err
		}
	}
	loc := s.cp
	s.cp.offset += uint64(len(rec))
	s.cp.height++
	if err := s.index(b, loc, len(rec)); err != nil {
		return fmt.Errorf("blkstorage: index block %d: %w", b.Header.Number, err)
	}
	s.lastHash = protoutil.BlockHeaderHash(b.Header)
	close(s.notify)
	s.notify = make(chan struct{})
	return nil
}

// Height is the number of stored blocks.
func (s *FileStore) Height() uint64 {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.cp.height
}

// WaitForHeight blocks until block n is stored or ctx ends.
func (s *FileStore) WaitForHeight(ctx context.Context, n uint64) error {
	for {
		s.mu.RLock()
		h, ch := s.cp.height, s.notify
		s.mu.RUnlock()
		if h > n {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// BlockByNumber reads block n from its segment file.
func (s *FileStore) BlockByNumber(n uint64) (*common.Block, error) {
	v, err := s.idx.Get(blockKey(n), nil)
	if errors.Is(err, leveldb.ErrNotFound) {
		return nil, fmt.Errorf("%w: block %d", ErrNotFound, n)
	}
	if err != nil {
		return nil, err
	}
	f, err := os.Open(s.path(binary.BigEndian.Uint64(v)))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	buf := make([]byte, binary.BigEndian.Uint32(v[16:]))
	if _, err := f.ReadAt(buf, int64(binary.BigEndian.Uint64(v[8:]))); err != nil {
		return nil, fmt.Errorf("blkstorage: read block %d: %w", n, err)
	}
	l, k := protowire.ConsumeVarint(buf)
	if k < 0 || int(l) != len(buf)-k {
		return nil, fmt.Errorf("blkstorage: corrupt record for block %d", n)
	}
	b := &common.Block{}
	if err := proto.Unmarshal(buf[k:], b); err != nil {
		return nil, fmt.Errorf("blkstorage: block %d: %w", n, err)
	}
	return b, nil
}

// TxIDExists reports whether txID was stored.
func (s *FileStore) TxIDExists(txID string) (bool, error) {
	return s.idx.Has(append([]byte{txIDPfx}, txID...), nil)
}

// TxByID returns the location, validation code and envelope of txID.
func (s *FileStore) TxByID(txID string) (*TxLoc, error) {
	v, err := s.idx.Get(append([]byte{txIDPfx}, txID...), nil)
	if errors.Is(err, leveldb.ErrNotFound) {
		return nil, fmt.Errorf("%w: tx %s", ErrNotFound, txID)
	}
	if err != nil {
		return nil, err
	}
	loc := &TxLoc{BlockNum: binary.BigEndian.Uint64(v), TxNum: binary.BigEndian.Uint64(v[8:]), ValidationCode: v[16]}
	b, err := s.BlockByNumber(loc.BlockNum)
	if err != nil {
		return nil, err
	}
	if int(loc.TxNum) >= len(b.Data.Data) {
		return nil, fmt.Errorf("blkstorage: tx %s index out of range", txID)
	}
	loc.Envelope = b.Data.Data[loc.TxNum]
	return loc, nil
}

// LastBlockHash is the header hash of the last stored block (nil if none).
func (s *FileStore) LastBlockHash() []byte {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.lastHash
}

// Close closes the segment file and the index.
func (s *FileStore) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	err := s.f.Close()
	if e := s.idx.Close(); err == nil {
		err = e
	}
	return err
}
