package deliverclient

import (
	"context"
	"errors"
	"io"
	"sync"
	"testing"
	"time"

	cb "fabricrepro/internal/protos/common"
	"fabricrepro/internal/protoutil"
)

// fakeSource is a TEST DOUBLE standing in for a peer's or orderer's Deliver
// service. Each Open call plays the next script: the block numbers it sends
// (relative to nothing: absolute numbers) and then how the stream ends.
type fakeSource struct {
	mu      sync.Mutex
	scripts []script
	opens   []uint64 // the start of every Open call
}

type script struct {
	blocks []uint64
	end    error // returned after the blocks (io.EOF if nil)
}

func (f *fakeSource) Open(ctx context.Context, start uint64) (Stream, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.opens = append(f.opens, start)
	if len(f.scripts) == 0 {
		return nil, errors.New("fake: no more scripts")
	}
	s := f.scripts[0]
	f.scripts = f.scripts[1:]
	i := 0
	return recvFunc(func() (*cb.Block, error) {
		if i < len(s.blocks) {
			b := protoutil.NewBlock(s.blocks[i], nil)
			b.Data.Data = [][]byte{{1}, {2}, {3}}
			b.Metadata.Metadata[cb.BlockMetadataIndex_TRANSACTIONS_FILTER] = []byte{0, 11, 0}
			i++
			return b, nil
		}
		if s.end != nil {
			return nil, s.end
		}
		return nil, io.EOF
	}), nil
}

func collect(t *testing.T, src Source, opt Options) ([]uint64, error) {
	t.Helper()
	opt.Retry = time.Millisecond
	var got []uint64
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := Watch(ctx, src, opt, func(b *cb.Block, _ time.Time) error {
		got = append(got, b.Header.Number)
		return nil
	})
	return got, err
}

func TestGapIsReRequested(t *testing.T) {
	src := &fakeSource{scripts: []script{
		{blocks: []uint64{1, 2, 4, 5}},                                // 3 is missing: re-request from 3
		{blocks: []uint64{3, 4}, end: errors.New("connection reset")}, // broken stream
		{blocks: []uint64{4, 4, 5, 6, 7}},                             // a duplicate is ignored; stop after 6
	}}
	var reasons []error
	got, err := collect(t, src, Options{Start: 1, Stop: 6, OnReconnect: func(_ uint64, r error) { reasons = append(reasons, r) }})
	if err != nil {
		t.Fatal(err)
	}
	want := []uint64{1, 2, 3, 4, 5, 6}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("got %v, want %v", got, want)
		}
	}
	if len(src.opens) != 3 || src.opens[0] != 1 || src.opens[1] != 3 || src.opens[2] != 5 {
		t.Fatalf("opens %v, want [1 3 5]", src.opens)
	}
	if len(reasons) != 2 || !errors.Is(reasons[0], ErrGap) {
		t.Fatalf("reasons %v", reasons)
	}
}

func TestTimeoutReturnsContextError(t *testing.T) {
	src := &fakeSource{}
	for i := 0; i < 10000; i++ {
		src.scripts = append(src.scripts, script{blocks: []uint64{0}})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	n := 0
	err := Watch(ctx, src, Options{Start: 0, Stop: NoStop, Retry: time.Millisecond}, func(*cb.Block, time.Time) error { n++; return nil })
	if !errors.Is(err, context.DeadlineExceeded) || n != 1 {
		t.Fatalf("err %v, blocks %d", err, n)
	}
}

func TestNewestStartAndCallbackError(t *testing.T) {
	src := &fakeSource{scripts: []script{{blocks: []uint64{9, 10, 11}}}}
	stopErr := errors.New("enough")
	var got []uint64
	err := Watch(context.Background(), src, Options{Start: Newest, Stop: NoStop}, func(b *cb.Block, _ time.Time) error {
		got = append(got, b.Header.Number)
		if len(got) == 2 {
			return stopErr
		}
		return nil
	})
	if err != stopErr || len(got) != 2 || got[0] != 9 || got[1] != 10 {
		t.Fatalf("err %v got %v", err, got)
	}
}

func TestValidCount(t *testing.T) {
	b := protoutil.NewBlock(1, nil)
	b.Data.Data = [][]byte{{1}, {2}, {3}}
	if ValidCount(b) != 3 {
		t.Fatal("block without filter: every tx counts as valid")
	}
	b.Metadata.Metadata[cb.BlockMetadataIndex_TRANSACTIONS_FILTER] = []byte{0, 11, 0}
	if ValidCount(b) != 2 {
		t.Fatal("filter not applied")
	}
}
