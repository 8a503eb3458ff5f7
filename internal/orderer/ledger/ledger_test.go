package ledger

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	cb "fabricrepro/internal/protos/common"
	ab "fabricrepro/internal/protos/orderer"
	"fabricrepro/internal/protoutil"
)

func block(n uint64) *cb.Block {
	b := protoutil.NewBlock(n, []byte{byte(n)})
	b.Data.Data = [][]byte{[]byte("tx"), {byte(n)}}
	b.Header.DataHash = protoutil.BlockDataHash(b.Data)
	return b
}

func specified(n uint64) *ab.SeekPosition {
	return &ab.SeekPosition{Type: &ab.SeekPosition_Specified{Specified: &ab.SeekSpecified{Number: n}}}
}

var (
	oldest = &ab.SeekPosition{Type: &ab.SeekPosition_Oldest{Oldest: &ab.SeekOldest{}}}
	newest = &ab.SeekPosition{Type: &ab.SeekPosition_Newest{Newest: &ab.SeekNewest{}}}
)

// kinds runs a test against a RAM and a file ledger.
func kinds(t *testing.T, f func(t *testing.T, open func() Ledger)) {
	t.Run("ram", func(t *testing.T) { f(t, func() Ledger { return NewRAM(1000) }) })
	t.Run("file", func(t *testing.T) {
		dir := t.TempDir()
		f(t, func() Ledger {
			l, err := OpenFile(dir, true)
			if err != nil {
				t.Fatal(err)
			}
			return l
		})
	})
}

func TestAppendIterateAndWait(t *testing.T) {
	kinds(t, func(t *testing.T, open func() Ledger) {
		l := open()
		defer l.Close()
		for i := uint64(0); i < 5; i++ {
			if err := l.Append(block(i)); err != nil {
				t.Fatal(err)
			}
		}
		if err := l.Append(block(7)); err == nil {
			t.Fatal("a gap must be refused")
		}
		if l.Height() != 5 {
			t.Fatalf("height %d", l.Height())
		}
		ctx := context.Background()
		it, n := l.Iterator(oldest)
		if n != 0 {
			t.Fatalf("oldest starts at %d", n)
		}
		for i := uint64(0); i < 5; i++ {
			b, st := it.Next(ctx)
			if st != cb.Status_SUCCESS || b.Header.Number != i || string(b.Data.Data[1]) != string([]byte{byte(i)}) {
				t.Fatalf("block %d: %v %v", i, st, b.GetHeader())
			}
		}
		if _, n := l.Iterator(newest); n != 4 {
			t.Fatalf("newest starts at %d", n)
		}
		if it, n := l.Iterator(specified(3)); n != 3 {
			t.Fatalf("specified starts at %d", n)
		} else if b, _ := it.Next(ctx); b.Header.Number != 3 {
			t.Fatal("specified 3")
		}
		// Beyond the height: NOT_FOUND, as Fabric's ledgers answer.
		if it, _ := l.Iterator(specified(6)); func() cb.Status { _, s := it.Next(ctx); return s }() != cb.Status_NOT_FOUND {
			t.Fatal("specified beyond height must be NOT_FOUND")
		}
		// At the height: wait for the next append.
		it, _ = l.Iterator(specified(5))
		got := make(chan uint64)
		go func() {
			b, _ := it.Next(ctx)
			got <- b.GetHeader().GetNumber()
		}()
		select {
		case <-got:
			t.Fatal("returned before the block existed")
		case <-time.After(30 * time.Millisecond):
		}
		l.Append(block(5))
		if n := <-got; n != 5 {
			t.Fatalf("waited for block %d", n)
		}
		// A cancelled context and a closed ledger both end a wait.
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		if _, st := it.Next(cctx); st != cb.Status_SERVICE_UNAVAILABLE {
			t.Fatalf("cancelled wait: %v", st)
		}
		go func() { time.Sleep(20 * time.Millisecond); l.Close() }()
		if _, st := it.Next(ctx); st != cb.Status_SERVICE_UNAVAILABLE {
			t.Fatalf("closed wait: %v", st)
		}
	})
}

func TestRAMRingDropsOldest(t *testing.T) {
	l := NewRAM(3)
	for i := uint64(0); i < 5; i++ {
		l.Append(block(i))
	}
	if _, err := l.Block(1); err == nil {
		t.Fatal("block 1 should have been dropped")
	}
	if _, n := l.Iterator(oldest); n != 2 {
		t.Fatalf("oldest kept is %d", n)
	}
	if it, _ := l.Iterator(specified(1)); func() cb.Status { _, s := it.Next(context.Background()); return s }() != cb.Status_NOT_FOUND {
		t.Fatal("a dropped block must be NOT_FOUND")
	}
	for i := uint64(2); i < 5; i++ {
		if b, err := l.Block(i); err != nil || b.Header.Number != i {
			t.Fatalf("block %d: %v", i, err)
		}
	}
}

func TestFileReopenAndTornTail(t *testing.T) {
	dir := t.TempDir()
	l, err := OpenFile(dir, false)
	if err != nil {
		t.Fatal(err)
	}
	for i := uint64(0); i < 4; i++ {
		l.Append(block(i))
	}
	l.Close()

	// A crash in the middle of an append leaves a torn record.
	f, _ := os.OpenFile(filepath.Join(dir, FileName), os.O_APPEND|os.O_WRONLY, 0)
	f.Write([]byte{0x90, 0x03, 1, 2, 3})
	f.Close()

	l, err = OpenFile(dir, true)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if l.Height() != 4 {
		t.Fatalf("reopened height %d", l.Height())
	}
	for i := uint64(0); i < 4; i++ {
		b, err := l.Block(i)
		if err != nil || b.Header.Number != i || string(b.Header.DataHash) != string(block(i).Header.DataHash) {
			t.Fatalf("block %d after reopen: %v", i, err)
		}
	}
	if err := l.Append(block(4)); err != nil {
		t.Fatal(err)
	}
	if b, err := l.Block(4); err != nil || b.Header.Number != 4 {
		t.Fatalf("append after reopen: %v", err)
	}
}
