package main

import (
	"context"
	"fmt"
	"sync"
	"time"

	"google.golang.org/protobuf/proto"

	"fabricrepro/internal/deliverclient"
	cb "fabricrepro/internal/protos/common"
	pb "fabricrepro/internal/protos/peer"
	"fabricrepro/internal/protoutil"
)

// commitWaiter follows a peer's Deliver stream from its newest block on and
// remembers the validation code of every transaction it sees.
type commitWaiter struct {
	mu      sync.Mutex
	cond    *sync.Cond
	codes   map[string]pb.TxValidationCode
	started bool
	err     error
}

// startWaiter opens the watch and returns once the peer has delivered its
// newest block, so every block cut afterwards will be seen.
func startWaiter(ctx context.Context, src deliverclient.Source) (*commitWaiter, error) {
	w := &commitWaiter{codes: map[string]pb.TxValidationCode{}}
	w.cond = sync.NewCond(&w.mu)
	go func() {
		err := deliverclient.Watch(ctx, src, deliverclient.Options{Start: deliverclient.Newest, Stop: deliverclient.NoStop},
			func(b *cb.Block, _ time.Time) error {
				w.mu.Lock()
				defer w.mu.Unlock()
				w.record(b)
				w.started = true
				w.cond.Broadcast()
				return nil
			})
		w.mu.Lock()
		w.err = err
		w.cond.Broadcast()
		w.mu.Unlock()
	}()
	w.mu.Lock()
	defer w.mu.Unlock()
	for !w.started && w.err == nil {
		w.cond.Wait()
	}
	if !w.started {
		return nil, fmt.Errorf("deliver from peer: %w", w.err)
	}
	return w, nil
}

func (w *commitWaiter) record(b *cb.Block) {
	var filter []byte
	if b.Metadata != nil && len(b.Metadata.Metadata) > int(cb.BlockMetadataIndex_TRANSACTIONS_FILTER) {
		filter = b.Metadata.Metadata[cb.BlockMetadataIndex_TRANSACTIONS_FILTER]
	}
	for i, raw := range b.Data.Data {
		env := &cb.Envelope{}
		if proto.Unmarshal(raw, env) != nil {
			continue
		}
		_, chdr, _, err := protoutil.UnmarshalPayload(env)
		if err != nil {
			continue
		}
		if _, seen := w.codes[chdr.TxId]; seen {
			// A second copy of an envelope (a Kafka producer's retry orders it twice) is marked
			// DUPLICATE_TXID by the peer; the transaction's own outcome is its first copy's.
			continue
		}
		code := pb.TxValidationCode_VALID
		if i < len(filter) {
			code = pb.TxValidationCode(filter[i])
		}
		w.codes[chdr.TxId] = code
	}
}

// wait blocks until every txID has committed (valid or not) and returns how
// many were invalid, with the first invalid one's code.
func (w *commitWaiter) wait(ctx context.Context, txIDs []string) (invalid int, example string, err error) {
	stop := context.AfterFunc(ctx, func() { w.mu.Lock(); w.cond.Broadcast(); w.mu.Unlock() })
	defer stop()
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, id := range txIDs {
		for {
			if code, ok := w.codes[id]; ok {
				if code != pb.TxValidationCode_VALID {
					invalid++
					if example == "" {
						example = fmt.Sprintf("tx %s: %s", id, code)
					}
				}
				break
			}
			if ctx.Err() != nil {
				return invalid, example, fmt.Errorf("waiting for commit of tx %s: %w", id, ctx.Err())
			}
			if w.err != nil {
				return invalid, example, fmt.Errorf("deliver from peer: %w", w.err)
			}
			w.cond.Wait()
		}
	}
	return invalid, example, nil
}
