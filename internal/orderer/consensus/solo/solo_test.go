package solo

import (
	"sync"
	"testing"
	"time"

	"fabricrepro/internal/orderer/blockcutter"
	cb "fabricrepro/internal/protos/common"
)

// fakeSupport records the batches written.
type fakeSupport struct {
	cutter  *blockcutter.Receiver
	timeout time.Duration
	mu      sync.Mutex
	blocks  [][]*cb.Envelope
	reasons []blockcutter.CutReason
	written chan struct{}
}

func newFake(count uint32, timeout time.Duration) *fakeSupport {
	return &fakeSupport{
		cutter: blockcutter.New(func() blockcutter.Config {
			return blockcutter.Config{MaxMessageCount: count, PreferredMaxBytes: 1 << 20}
		}),
		timeout: timeout, written: make(chan struct{}, 100),
	}
}

func (f *fakeSupport) ChannelID() string                             { return "ch" }
func (f *fakeSupport) Sequence() uint64                              { return 0 }
func (f *fakeSupport) BatchTimeout() time.Duration                   { return f.timeout }
func (f *fakeSupport) BlockCutter() *blockcutter.Receiver            { return f.cutter }
func (f *fakeSupport) ProcessNormalMsg(*cb.Envelope) (uint64, error) { return 0, nil }
func (f *fakeSupport) Flush()                                        {}
func (f *fakeSupport) CreateNextBlock(batch []*cb.Envelope) *cb.Block {
	return &cb.Block{Data: &cb.BlockData{Data: make([][]byte, len(batch))}}
}
func (f *fakeSupport) WriteBlock(b *cb.Block, reason blockcutter.CutReason) {
	f.mu.Lock()
	f.blocks = append(f.blocks, make([]*cb.Envelope, len(b.Data.Data)))
	f.reasons = append(f.reasons, reason)
	f.mu.Unlock()
	f.written <- struct{}{}
}

func (f *fakeSupport) waitBlock(t *testing.T, within time.Duration) {
	t.Helper()
	select {
	case <-f.written:
	case <-time.After(within):
		t.Fatal("no block written in time")
	}
}

func TestBatchTimeoutCutsPendingBatch(t *testing.T) {
	f := newFake(10, 100*time.Millisecond)
	ch, _ := New().HandleChain(f)
	ch.Start()
	defer ch.Halt()
	start := time.Now()
	for i := 0; i < 3; i++ {
		if err := ch.Order(&cb.Envelope{Payload: []byte{1}}, 0); err != nil {
			t.Fatal(err)
		}
	}
	f.waitBlock(t, 2*time.Second)
	if el := time.Since(start); el < 90*time.Millisecond {
		t.Fatalf("cut after %s, before the batch timeout", el)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.blocks) != 1 || len(f.blocks[0]) != 3 || f.reasons[0] != blockcutter.CutTimeout {
		t.Fatalf("blocks %d reasons %v", len(f.blocks), f.reasons)
	}
}

func TestFullBatchCutWithoutWaiting(t *testing.T) {
	f := newFake(2, time.Hour)
	ch, _ := New().HandleChain(f)
	ch.Start()
	defer ch.Halt()
	for i := 0; i < 5; i++ {
		ch.Order(&cb.Envelope{Payload: []byte{1}}, 0)
	}
	f.waitBlock(t, time.Second)
	f.waitBlock(t, time.Second)
	select {
	case <-f.written:
		t.Fatal("the fifth message must wait for its batch")
	case <-time.After(50 * time.Millisecond):
	}
}

func TestOrderAfterHaltFails(t *testing.T) {
	f := newFake(2, time.Hour)
	ch, _ := New().HandleChain(f)
	ch.Start()
	ch.Halt()
	ch.Halt() // twice is fine
	if err := ch.Order(&cb.Envelope{}, 0); err == nil {
		t.Fatal("Order after Halt must fail")
	}
	select {
	case <-ch.Errored():
	default:
		t.Fatal("Errored must be closed after Halt")
	}
}
