// Package txsim is the transaction simulator: it runs a chaincode's reads and
// writes against the committed world state without changing it, recording
// each key read with the version it had and each write, and produces the
// transaction's read-write set in Fabric 1.2's wire format
// (rwset.TxReadWriteSet holding one kvrwset.KVRWSet per namespace).
//
// The result is deterministic, as Fabric's rwsetutil builder makes it:
// namespaces are sorted by name, and within a namespace reads and writes are
// each sorted by key, so two endorsers that simulate the same proposal on
// the same state produce byte-identical results.
//
// One documented difference from Fabric 1.2: a key that the transaction has
// already written reads back the written value (read-your-writes; Fabric 1.2
// returns the committed value). Such a read consults no committed version and
// so adds nothing to the read set. Reads of keys not written by the
// transaction are recorded as in Fabric: the first committed version seen,
// nil for a key that does not exist.
package txsim

import (
	"errors"
	"fmt"
	"sort"

	"google.golang.org/protobuf/proto"

	"fabricrepro/internal/ledger/statedb"
	"fabricrepro/internal/protos/ledger/rwset"
	"fabricrepro/internal/protos/ledger/rwset/kvrwset"
)

// ErrDone is returned when a simulator is used after its results were taken.
var ErrDone = errors.New("txsim: simulator used after GetTxSimulationResults or Done")

// Simulator simulates one transaction. It is not safe for concurrent use; a
// chaincode invocation runs on one goroutine.
type Simulator struct {
	db   statedb.DB
	ns   map[string]*nsSet
	done bool
}

type nsSet struct {
	reads  map[string]*kvrwset.Version // nil version: key absent when read
	writes map[string]*kvrwset.KVWrite
}

// New returns a simulator reading committed state from db.
func New(db statedb.DB) *Simulator { return &Simulator{db: db, ns: map[string]*nsSet{}} }

func (s *Simulator) set(ns string) *nsSet {
	n := s.ns[ns]
	if n == nil {
		n = &nsSet{reads: map[string]*kvrwset.Version{}, writes: map[string]*kvrwset.KVWrite{}}
		s.ns[ns] = n
	}
	return n
}

// GetState returns the value of ns/key as this transaction sees it: its own
// write if it wrote the key, else the committed value (nil if absent), whose
// version is recorded in the read set.
func (s *Simulator) GetState(ns, key string) ([]byte, error) {
	if s.done {
		return nil, ErrDone
	}
	n := s.set(ns)
	if w, ok := n.writes[key]; ok {
		if w.IsDelete {
			return nil, nil
		}
		return append([]byte(nil), w.Value...), nil
	}
	vv, err := s.db.GetState(ns, key)
	if err != nil {
		return nil, fmt.Errorf("txsim: read %s/%s: %w", ns, key, err)
	}
	if _, seen := n.reads[key]; !seen {
		var ver *kvrwset.Version
		if vv != nil {
			ver = &kvrwset.Version{BlockNum: vv.Version.BlockNum, TxNum: vv.Version.TxNum}
		}
		n.reads[key] = ver
	}
	if vv == nil {
		return nil, nil
	}
	return vv.Value, nil
}

// SetState records a write of value to ns/key; a later write to the same key
// replaces it.
func (s *Simulator) SetState(ns, key string, value []byte) error {
	if s.done {
		return ErrDone
	}
	if key == "" {
		return errors.New("txsim: empty key")
	}
	s.set(ns).writes[key] = &kvrwset.KVWrite{Key: key, Value: append([]byte(nil), value...)}
	return nil
}

// DeleteState records the deletion of ns/key.
func (s *Simulator) DeleteState(ns, key string) error {
	if s.done {
		return ErrDone
	}
	if key == "" {
		return errors.New("txsim: empty key")
	}
	s.set(ns).writes[key] = &kvrwset.KVWrite{Key: key, IsDelete: true}
	return nil
}

// TxRWSet returns the read-write set as a message: namespaces sorted by name,
// reads and writes sorted by key. The simulator cannot be used afterwards.
func (s *Simulator) TxRWSet() (*rwset.TxReadWriteSet, error) {
	if s.done {
		return nil, ErrDone
	}
	s.done = true
	names := make([]string, 0, len(s.ns))
	for name := range s.ns {
		names = append(names, name)
	}
	sort.Strings(names)
	out := &rwset.TxReadWriteSet{DataModel: rwset.TxReadWriteSet_KV}
	for _, name := range names {
		n := s.ns[name]
		kv := &kvrwset.KVRWSet{}
		for _, k := range sortedKeys(n.reads) {
			kv.Reads = append(kv.Reads, &kvrwset.KVRead{Key: k, Version: n.reads[k]})
		}
		for _, k := range sortedKeys(n.writes) {
			kv.Writes = append(kv.Writes, n.writes[k])
		}
		raw, err := marshal(kv)
		if err != nil {
			return nil, err
		}
		out.NsRwset = append(out.NsRwset, &rwset.NsReadWriteSet{Namespace: name, Rwset: raw})
	}
	return out, nil
}

// GetTxSimulationResults returns the marshaled TxReadWriteSet, the bytes that
// go into ChaincodeAction.Results. The simulator cannot be used afterwards.
func (s *Simulator) GetTxSimulationResults() ([]byte, error) {
	set, err := s.TxRWSet()
	if err != nil {
		return nil, err
	}
	return marshal(set)
}

// Done releases the simulator; further calls fail with ErrDone.
func (s *Simulator) Done() { s.done = true }

func marshal(m proto.Message) ([]byte, error) {
	return proto.MarshalOptions{Deterministic: true}.Marshal(m)
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// ParseResults unmarshals ChaincodeAction.Results into the read-write set of
// each namespace, in order (a helper for tests and clients).
func ParseResults(raw []byte) (map[string]*kvrwset.KVRWSet, []string, error) {
	set := &rwset.TxReadWriteSet{}
	if err := proto.Unmarshal(raw, set); err != nil {
		return nil, nil, fmt.Errorf("txsim: bad TxReadWriteSet: %w", err)
	}
	out := map[string]*kvrwset.KVRWSet{}
	var order []string
	for _, ns := range set.NsRwset {
		kv := &kvrwset.KVRWSet{}
		if err := proto.Unmarshal(ns.Rwset, kv); err != nil {
			return nil, nil, fmt.Errorf("txsim: bad KVRWSet of %s: %w", ns.Namespace, err)
		}
		out[ns.Namespace] = kv
		order = append(order, ns.Namespace)
	}
	return out, order, nil
}
