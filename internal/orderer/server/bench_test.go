package server

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"fabricrepro/internal/channelconfig"
	"fabricrepro/internal/orderer/blockcutter"
	cb "fabricrepro/internal/protos/common"
	ab "fabricrepro/internal/protos/orderer"
)

// envelopeBytes is FastFabric's transaction size (2.9 KB).
const envelopeBytes = 2900

// benchBlockSize is the block size of FastFabric's experiments.
const benchBlockSize = 100

// BenchmarkBroadcastToBlock measures the orderer's throughput from the first
// Broadcast to the Deliver arrival of the block holding the last envelope,
// with pre-signed 2.9 KB envelopes, 100 per block, sent pipelined over one
// or several streams, on the RAM and the file ledger. One op is one envelope.
func BenchmarkBroadcastToBlock(b *testing.B) {
	for _, kind := range []string{"ram", "file"} {
		for _, streams := range []int{1, 4, 16} {
			b.Run(fmt.Sprintf("ledger=%s/streams=%d", kind, streams), func(b *testing.B) {
				benchBroadcast(b, kind, streams)
			})
		}
	}
}

func benchBroadcast(b *testing.B, kind string, streams int) {
	batch := channelconfig.DefaultBatch
	batch.MaxMessageCount = benchBlockSize
	batch.PreferredMaxBytes = 2 << 20
	batch.Timeout = 2 * time.Second
	n := newNetwork(b, batch)
	o := start(b, n.config(kind, b.TempDir()))
	c := dial(b, o.Addr())

	// Round up to whole blocks so no block waits for the batch timeout.
	total := (b.N + benchBlockSize - 1) / benchBlockSize * benchBlockSize
	pad := envelopeBytes
	probe := txEnvelope(b, testChannel, n.client, pad)
	pad += envelopeBytes - int(blockcutter.MessageSize(probe))
	envs := make([]*cb.Envelope, total)
	for i := range envs {
		envs[i] = txEnvelope(b, testChannel, n.client, pad)
	}
	lastBlock := uint64(total / benchBlockSize)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ds, err := c.Deliver(ctx)
	if err != nil {
		b.Fatal(err)
	}
	ds.Send(seekEnvelope(b, testChannel, n.client, specified(1), specified(lastBlock), ab.SeekInfo_BLOCK_UNTIL_READY))
	delivered := make(chan error, 1)
	go func() {
		for {
			r, err := ds.Recv()
			if err != nil {
				delivered <- err
				return
			}
			if st, ok := r.Type.(*ab.DeliverResponse_Status); ok {
				if st.Status != cb.Status_SUCCESS {
					delivered <- fmt.Errorf("deliver status %v", st.Status)
				} else {
					delivered <- nil
				}
				return
			}
		}
	}()

	bcs := make([]ab.AtomicBroadcast_BroadcastClient, streams)
	for i := range bcs {
		if bcs[i], err = c.Broadcast(ctx); err != nil {
			b.Fatal(err)
		}
	}
	b.SetBytes(envelopeBytes)
	b.ResetTimer()
	begin := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, 2*streams)
	for s := 0; s < streams; s++ {
		mine := envs[s*total/streams : (s+1)*total/streams]
		bc := bcs[s]
		wg.Add(2)
		go func() { // sender: pipelined, as a load generator blasting
			defer wg.Done()
			for _, e := range mine {
				if err := bc.Send(e); err != nil {
					errs <- err
					return
				}
			}
		}()
		go func() { // receiver of the acknowledgements
			defer wg.Done()
			for range mine {
				r, err := bc.Recv()
				if err != nil || r.Status != cb.Status_SUCCESS {
					errs <- fmt.Errorf("ack %v %v", r, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	acked := time.Since(begin)
	if err := <-delivered; err != nil {
		b.Fatal(err)
	}
	elapsed := time.Since(begin)
	b.StopTimer()
	select {
	case err := <-errs:
		b.Fatal(err)
	default:
	}
	b.ReportMetric(float64(total)/elapsed.Seconds(), "tx/s")
	b.ReportMetric(float64(total)/acked.Seconds(), "acked_tx/s")
	b.ReportMetric(float64(lastBlock)/elapsed.Seconds(), "blocks/s")
}
