package ledger

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log"
	"os"
	"path/filepath"
	"sync"

	"google.golang.org/protobuf/proto"

	cb "fabricrepro/internal/protos/common"
	ab "fabricrepro/internal/protos/orderer"
)

// FileName is the block file inside a file ledger's directory. Fabric names
// its files blockfile_000000, ...; one file is enough for a run.
const FileName = "blockfile_000000"

// File is an append-only file of blocks, each prefixed by its length as a
// protobuf varint (Fabric's block file framing), with the offset of every
// block indexed in memory.
type File struct {
	mu      sync.RWMutex
	f       *os.File
	sync    bool
	offsets []int64 // offsets[n] is where block n's length prefix starts
	end     int64   // end of the last complete record
	n       *notifier
	closed  bool
}

// OpenFile opens (or creates) the file ledger in dir and rebuilds its index.
// A torn record at the end, left by a crash during an append, is cut off.
// With syncEach, every append is fsynced before it becomes visible, as
// Fabric's block store does.
func OpenFile(dir string, syncEach bool) (*File, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	path := filepath.Join(dir, FileName)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	l := &File{f: f, sync: syncEach, n: newNotifier()}
	if err := l.scan(); err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return l, nil
}

// scan walks the file, indexing every complete block and truncating a torn
// tail.
func (l *File) scan() error {
	if _, err := l.f.Seek(0, io.SeekStart); err != nil {
		return err
	}
	r := bufio.NewReaderSize(l.f, 1<<20)
	var off int64
	for {
		size, err := binary.ReadUvarint(r)
		if err == io.EOF {
			break
		}
		if err != nil {
			break // torn length prefix
		}
		buf := make([]byte, size)
		if _, err := io.ReadFull(r, buf); err != nil {
			break // torn block
		}
		b := &cb.Block{}
		if err := proto.Unmarshal(buf, b); err != nil {
			break
		}
		if b.GetHeader().GetNumber() != uint64(len(l.offsets)) {
			return fmt.Errorf("block at offset %d has number %d, want %d", off, b.GetHeader().GetNumber(), len(l.offsets))
		}
		l.offsets = append(l.offsets, off)
		off += int64(uvarintLen(size)) + int64(size)
	}
	l.end = off
	if info, err := l.f.Stat(); err == nil && info.Size() > off {
		log.Printf("file ledger: truncating %d bytes of a torn block after block %d", info.Size()-off, len(l.offsets)-1)
		if err := l.f.Truncate(off); err != nil {
			return err
		}
	}
	_, err := l.f.Seek(off, io.SeekStart)
	return err
}

func uvarintLen(x uint64) int {
	var b [binary.MaxVarintLen64]byte
	return binary.PutUvarint(b[:], x)
}

// Height implements Ledger.
func (l *File) Height() uint64 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return uint64(len(l.offsets))
}

// Append implements Ledger.
func (l *File) Append(block *cb.Block) error {
	raw, err := proto.Marshal(block)
	if err != nil {
		return err
	}
	rec := binary.AppendUvarint(make([]byte, 0, len(raw)+binary.MaxVarintLen64), uint64(len(raw)))
	rec = append(rec, raw...)

	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return ErrClosed
	}
	if block.GetHeader().GetNumber() != uint64(len(l.offsets)) {
		l.mu.Unlock()
		return fmt.Errorf("block number %d does not follow height %d", block.GetHeader().GetNumber(), len(l.offsets))
	}
	if _, err := l.f.WriteAt(rec, l.end); err != nil {
		l.mu.Unlock()
		return err
	}
	if l.sync {
		if err := l.f.Sync(); err != nil {
			l.mu.Unlock()
			return err
		}
	}
	l.offsets = append(l.offsets, l.end)
	l.end += int64(len(rec))
	l.mu.Unlock()
	l.n.notify()
	return nil
}

// Block implements Ledger; it reads the block back from the file.
func (l *File) Block(n uint64) (*cb.Block, error) {
	l.mu.RLock()
	if n >= uint64(len(l.offsets)) {
		l.mu.RUnlock()
		return nil, fmt.Errorf("block %d beyond height %d", n, len(l.offsets))
	}
	start := l.offsets[n]
	stop := l.end
	if n+1 < uint64(len(l.offsets)) {
		stop = l.offsets[n+1]
	}
	f := l.f
	l.mu.RUnlock()

	rec := make([]byte, stop-start)
	if _, err := f.ReadAt(rec, start); err != nil {
		return nil, err
	}
	size, k := binary.Uvarint(rec)
	if k <= 0 || uint64(len(rec)-k) != size {
		return nil, errors.New("corrupt block record")
	}
	b := &cb.Block{}
	if err := proto.Unmarshal(rec[k:], b); err != nil {
		return nil, err
	}
	return b, nil
}

// Iterator implements Ledger.
func (l *File) Iterator(start *ab.SeekPosition) (Iterator, uint64) { return newIterator(l, start) }

// Close implements Ledger.
func (l *File) Close() error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil
	}
	l.closed = true
	err := l.f.Close()
	l.mu.Unlock()
	l.n.close()
	return err
}

func (l *File) oldest() uint64 { return 0 }

func (l *File) notifier() *notifier { return l.n }
