package txverify

import (
	"fabricrepro/internal/ledger/statedb"
	"fabricrepro/internal/lscc"
)

type nsKey struct{ ns, key string }

// replayState is the world state the verifier rebuilds by replaying the
// ledger's valid writes block by block (statedb.DB, for internal/validation's
// VSCC and MVCC). Only versions matter to MVCC, so values are kept for the
// lscc namespace alone (the chaincode definitions VSCC reads).
//
// pre is the state before the ledger's first block that no block wrote:
// keys pre-loaded outside the ledger, and chaincode definitions the ledger
// does not hold (see Verify). A key the ledger writes or deletes hides its
// pre-state entry.
type replayState struct {
	kv        map[nsKey]*statedb.VersionedValue // nil value: deleted
	pre       map[nsKey]*statedb.VersionedValue
	savepoint statedb.Height
	saved     bool
}

var _ statedb.DB = (*replayState)(nil)

func newReplayState() *replayState {
	return &replayState{kv: map[nsKey]*statedb.VersionedValue{}, pre: map[nsKey]*statedb.VersionedValue{}}
}

// GetState is safe for concurrent readers while no ApplyUpdates runs (the
// validator reads lscc entries from several goroutines within a block).
func (s *replayState) GetState(ns, key string) (*statedb.VersionedValue, error) {
	k := nsKey{ns, key}
	if v, ok := s.kv[k]; ok {
		return v, nil
	}
	return s.pre[k], nil
}

func (s *replayState) ApplyUpdates(batch *statedb.UpdateBatch, savepoint statedb.Height) error {
	for _, w := range batch.Writes {
		k := nsKey{w.Namespace, w.Key}
		if w.Delete {
			s.kv[k] = nil
			continue
		}
		v := &statedb.VersionedValue{Version: w.Version}
		if w.Namespace == lscc.Namespace {
			v.Value = append([]byte(nil), w.Value...)
		}
		s.kv[k] = v
	}
	s.savepoint, s.saved = savepoint, true
	return nil
}

func (s *replayState) Savepoint() (statedb.Height, bool, error) { return s.savepoint, s.saved, nil }
func (s *replayState) Close() error                             { return nil }

// txIDIndex is the ledger's transaction-ID index as Fabric 1.2's block
// store keeps it: every transaction ID of every earlier block, valid or not.
type txIDIndex map[string]struct{}

func (x txIDIndex) TxIDExists(id string) (bool, error) { _, ok := x[id]; return ok, nil }
