package blockcutter

import (
	"testing"

	cb "fabricrepro/internal/protos/common"
)

func env(size int) *cb.Envelope { return &cb.Envelope{Payload: make([]byte, size)} }

func cutter(count, preferred uint32) *Receiver {
	return New(func() Config { return Config{MaxMessageCount: count, PreferredMaxBytes: preferred} })
}

func TestCutAtMaxMessageCount(t *testing.T) {
	r := cutter(3, 1000)
	for i := 0; i < 2; i++ {
		if b, pending := r.Ordered(env(10)); len(b) != 0 || !pending {
			t.Fatalf("message %d: batches %d pending %v", i, len(b), pending)
		}
	}
	b, pending := r.Ordered(env(10))
	if len(b) != 1 || len(b[0].Envelopes) != 3 || b[0].Reason != CutCount || pending {
		t.Fatalf("third message: %+v pending %v", b, pending)
	}
}

func TestCutBeforeOverflowingPreferredMaxBytes(t *testing.T) {
	r := cutter(100, 100)
	r.Ordered(env(40))
	r.Ordered(env(40)) // 80 bytes pending
	b, pending := r.Ordered(env(30))
	if len(b) != 1 || len(b[0].Envelopes) != 2 || b[0].Reason != CutBytes {
		t.Fatalf("want the two pending messages cut, got %+v", b)
	}
	if !pending || r.Pending() != 1 {
		t.Fatalf("the new message should be pending alone, pending=%d", r.Pending())
	}
	// Exactly reaching PreferredMaxBytes does not cut.
	r = cutter(100, 100)
	r.Ordered(env(60))
	if b, _ := r.Ordered(env(40)); len(b) != 0 {
		t.Fatalf("100 of 100 bytes must not cut, got %+v", b)
	}
}

func TestOversizedMessageIsolated(t *testing.T) {
	r := cutter(100, 100)
	if b, _ := r.Ordered(env(101)); len(b) != 1 || len(b[0].Envelopes) != 1 || b[0].Reason != CutIsolated {
		t.Fatalf("oversized message alone: %+v", b)
	}
	r.Ordered(env(10))
	b, pending := r.Ordered(env(500))
	if len(b) != 2 || len(b[0].Envelopes) != 1 || len(b[1].Envelopes) != 1 || pending {
		t.Fatalf("pending batch then oversized message: %+v pending %v", b, pending)
	}
	if b[1].Envelopes[0].Payload == nil || len(b[1].Envelopes[0].Payload) != 500 {
		t.Fatal("second batch must hold the oversized message")
	}
}

func TestSizeCountsPayloadAndSignature(t *testing.T) {
	e := &cb.Envelope{Payload: make([]byte, 60), Signature: make([]byte, 41)}
	if MessageSize(e) != 101 {
		t.Fatalf("size %d", MessageSize(e))
	}
	r := cutter(100, 100)
	if b, _ := r.Ordered(e); len(b) != 1 || b[0].Reason != CutIsolated {
		t.Fatalf("101 bytes with the signature must be isolated: %+v", b)
	}
}

func TestCutReturnsPendingAndResets(t *testing.T) {
	r := cutter(10, 1000)
	if r.Cut() != nil {
		t.Fatal("empty cut must be nil")
	}
	r.Ordered(env(10))
	r.Ordered(env(10))
	if got := r.Cut(); len(got) != 2 {
		t.Fatalf("cut %d", len(got))
	}
	// The byte count was reset too: 990 more bytes fit again.
	r.Ordered(env(500))
	if b, _ := r.Ordered(env(490)); len(b) != 0 {
		t.Fatal("byte count not reset by Cut")
	}
}

func TestConfigReadPerMessage(t *testing.T) {
	max := uint32(5)
	r := New(func() Config { return Config{MaxMessageCount: max, PreferredMaxBytes: 1000} })
	r.Ordered(env(1))
	max = 2
	if b, _ := r.Ordered(env(1)); len(b) != 1 {
		t.Fatal("a lowered MaxMessageCount must apply to the next message")
	}
}
