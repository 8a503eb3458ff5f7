package committer

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"sync"
)

// BlockLogHeader is the header of the per-block CSV (docs/interfaces.md).
const BlockLogHeader = "block_number,tx_count,valid_count,bytes,received_ns,validated_ns,committed_ns,vscc_ns,mvcc_ns,block_commit_ns,state_commit_ns,history_commit_ns"

// BlockLog appends one CSV row per committed block.
type BlockLog struct {
	mu sync.Mutex
	w  *bufio.Writer
	c  io.Closer
}

// OpenBlockLog opens path for appending, writing the header if the file is
// new or empty (a restarted peer keeps appending to the same file).
func OpenBlockLog(path string) (*BlockLog, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	l := &BlockLog{w: bufio.NewWriter(f), c: f}
	if fi.Size() == 0 {
		fmt.Fprintln(l.w, BlockLogHeader)
		if err := l.w.Flush(); err != nil {
			f.Close()
			return nil, err
		}
	}
	return l, nil
}

// NewBlockLog writes rows (after the header) to w; it never closes w.
func NewBlockLog(w io.Writer) *BlockLog {
	l := &BlockLog{w: bufio.NewWriter(w)}
	fmt.Fprintln(l.w, BlockLogHeader)
	return l
}

// Write appends st's row and flushes it, so a killed peer loses no row.
func (l *BlockLog) Write(st *Stats) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	fmt.Fprintf(l.w, "%d,%d,%d,%d,%d,%d,%d,%d,%d,%d,%d,%d\n", st.Number, st.TxCount, st.ValidCount, st.Bytes,
		st.ReceivedNs, st.ValidatedNs, st.CommittedNs, st.VSCC.Nanoseconds(), st.MVCC.Nanoseconds(),
		st.BlockCommit.Nanoseconds(), st.StateCommit.Nanoseconds(), st.History.Nanoseconds())
	return l.w.Flush()
}

// Close flushes and closes the file.
func (l *BlockLog) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	err := l.w.Flush()
	if l.c != nil {
		if e := l.c.Close(); err == nil {
			err = e
		}
	}
	return err
}
