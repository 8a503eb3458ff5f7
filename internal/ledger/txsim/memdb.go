package txsim

import (
	"sync"

	"fabricrepro/internal/ledger/statedb"
)

// MemDB is an in-memory statedb.DB for tests and tools that need a world
// state without LevelDB. It is a test double, not a state database of the
// reference build.
type MemDB struct {
	mu    sync.RWMutex
	kv    map[string]statedb.VersionedValue
	sp    statedb.Height
	hasSP bool
}

// NewMemDB returns an empty in-memory state.
func NewMemDB() *MemDB { return &MemDB{kv: map[string]statedb.VersionedValue{}} }

func memKey(ns, key string) string { return ns + "\x00" + key }

// GetState implements statedb.DB.
func (m *MemDB) GetState(ns, key string) (*statedb.VersionedValue, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	v, ok := m.kv[memKey(ns, key)]
	if !ok {
		return nil, nil
	}
	return &statedb.VersionedValue{Value: append([]byte(nil), v.Value...), Version: v.Version}, nil
}

// ApplyUpdates implements statedb.DB.
func (m *MemDB) ApplyUpdates(b *statedb.UpdateBatch, sp statedb.Height) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, w := range b.Writes {
		if w.Delete {
			delete(m.kv, memKey(w.Namespace, w.Key))
			continue
		}
		m.kv[memKey(w.Namespace, w.Key)] = statedb.VersionedValue{Value: append([]byte(nil), w.Value...), Version: w.Version}
	}
	m.sp, m.hasSP = sp, true
	return nil
}

// Savepoint implements statedb.DB.
func (m *MemDB) Savepoint() (statedb.Height, bool, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.sp, m.hasSP, nil
}

// Close implements statedb.DB.
func (m *MemDB) Close() error { return nil }
