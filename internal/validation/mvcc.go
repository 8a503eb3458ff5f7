package validation

import (
	"fmt"

	"fabricrepro/internal/ledger/statedb"
	cb "fabricrepro/internal/protos/common"
	"fabricrepro/internal/protos/ledger/rwset/kvrwset"
	pb "fabricrepro/internal/protos/peer"
)

// StateValidator is the MVCC stage: it checks the read sets of the block's
// VALID transactions, sequentially in block order, and collects the write
// sets of those that pass into the state update batch.
type StateValidator interface {
	ValidateAndPrepare(block *cb.Block, filter TxFilter) (*statedb.UpdateBatch, error)
}

// MVCC is Fabric 1.2's state-based validator on a statedb.DB.
type MVCC struct {
	DB statedb.DB
}

var _ StateValidator = (*MVCC)(nil)

type nsKey struct{ ns, key string }

// ValidateAndPrepare marks MVCC_READ_CONFLICT in filter for each transaction
// that read a key at a version other than the committed one, or that an
// earlier valid transaction of the same block wrote, and returns the writes
// of the remaining valid transactions at height (block, tx index).
func (m *MVCC) ValidateAndPrepare(block *cb.Block, filter TxFilter) (*statedb.UpdateBatch, error) {
	batch := &statedb.UpdateBatch{}
	updated := map[nsKey]bool{}
	blockNum := block.Header.Number
	for i, raw := range block.Data.Data {
		if !filter.IsValid(i) {
			continue
		}
		t, err := ParseEndorserTx(raw)
		if err != nil {
			// The validator passed it, so this cannot happen for our blocks.
			return nil, fmt.Errorf("mvcc: block %d tx %d: %w", blockNum, i, err)
		}
		code, err := m.validateTx(t, updated)
		if err != nil {
			return nil, err
		}
		if code != pb.TxValidationCode_VALID {
			filter.Set(i, code)
			continue
		}
		h := statedb.Height{BlockNum: blockNum, TxNum: uint64(i)}
		for _, ns := range t.RWSets {
			for _, w := range ns.KV.Writes {
				if w.IsDelete {
					batch.Delete(ns.Namespace, w.Key, h)
				} else {
					batch.Put(ns.Namespace, w.Key, w.Value, h)
				}
				updated[nsKey{ns.Namespace, w.Key}] = true
			}
		}
	}
	return batch, nil
}

func (m *MVCC) validateTx(t *Tx, updated map[nsKey]bool) (pb.TxValidationCode, error) {
	for _, ns := range t.RWSets {
		for _, r := range ns.KV.Reads {
			if updated[nsKey{ns.Namespace, r.Key}] {
				return pb.TxValidationCode_MVCC_READ_CONFLICT, nil
			}
			committed, err := m.DB.GetState(ns.Namespace, r.Key)
			if err != nil {
				return 0, fmt.Errorf("mvcc: read %s/%s: %w", ns.Namespace, r.Key, err)
			}
			if !sameVersion(committed, r.Version) {
				return pb.TxValidationCode_MVCC_READ_CONFLICT, nil
			}
		}
		// Range queries would have to be re-executed against the state, which
		// statedb.DB cannot scan; the reference chaincode shim never records
		// them, so a transaction that carries one is rejected conservatively.
		if len(ns.KV.RangeQueriesInfo) > 0 {
			return pb.TxValidationCode_PHANTOM_READ_CONFLICT, nil
		}
	}
	return pb.TxValidationCode_VALID, nil
}

// sameVersion is Fabric's version.AreSame: both absent, or equal heights.
func sameVersion(committed *statedb.VersionedValue, read *kvrwset.Version) bool {
	if committed == nil || read == nil {
		return committed == nil && read == nil
	}
	return committed.Version.BlockNum == read.BlockNum && committed.Version.TxNum == read.TxNum
}
