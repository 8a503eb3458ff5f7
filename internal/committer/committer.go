// Package committer is the peer's commit pipeline in Fabric 1.2's order: for
// each block, strictly one after another, (a) verify the orderer's signature
// against the channel's BlockValidation policy, (b) validate every
// transaction (layers, creator, duplicates, VSCC) over a pool of goroutines,
// (c) MVCC sequentially in block order, (d) append the block with its
// TRANSACTIONS_FILTER to the block store, apply the valid write sets to the
// state database and record them in the history database. Each stage sits
// behind an interface (validation.Validator, validation.StateValidator,
// blkstorage.BlockStore, statedb.DB, HistoryDB) so FastFabric's
// optimizations can replace one at a time.
package committer

import (
	"errors"
	"fmt"
	"log"
	"sync"
	"time"

	"google.golang.org/protobuf/proto"

	"fabricrepro/internal/ledger/blkstorage"
	"fabricrepro/internal/ledger/history"
	"fabricrepro/internal/ledger/statedb"
	"fabricrepro/internal/policy"
	cb "fabricrepro/internal/protos/common"
	pb "fabricrepro/internal/protos/peer"
	"fabricrepro/internal/validation"
)

// Config is the committer's configuration. Every later switch (FastFabric's
// pipeline, caches, storage offload) gets a field here.
type Config struct {
	// ChannelID is the channel whose blocks are committed.
	ChannelID string
	// VSCCWorkers is the number of goroutines that validate the transactions
	// of one block (Fabric 1.2's peer.validatorPoolSize; 0 = number of CPUs).
	VSCCWorkers int
	// SkipBlockVerification disables (a); only for feeding blocks that
	// were checked already.
	SkipBlockVerification bool
}

// HistoryDB records which transactions wrote which keys.
type HistoryDB interface {
	Commit(blockNum uint64, writes []history.Write) error
}

// Deps are the stages the committer drives.
type Deps struct {
	BlockValidation *policy.Policy            // the channel's BlockValidation policy
	Validator       validation.Validator      // (b)
	MVCC            validation.StateValidator // (c)
	Store           blkstorage.BlockStore     // (d) blocks
	State           statedb.DB                // (d) world state
	History         HistoryDB                 // (d) history; nil disables it
	Metrics         *Metrics                  // nil: no metrics
	BlockLog        *BlockLog                 // nil: no CSV
	// StateLock, if set, is held from the start of MVCC until the state is
	// committed (Fabric 1.2's txmgr commitRWLock); the endorser holds its
	// read side while simulating, so it never sees half a block.
	StateLock sync.Locker
	Logf      func(format string, args ...any)
}

// Stats is what the committer measured for one block.
type Stats struct {
	Number      uint64
	TxCount     int
	ValidCount  int
	Bytes       int
	ReceivedNs  int64 // block entered the committer
	ValidatedNs int64 // VSCC and MVCC done
	CommittedNs int64 // block, state and history written
	VSCC        time.Duration
	MVCC        time.Duration
	BlockCommit time.Duration
	StateCommit time.Duration
	History     time.Duration
	Filter      validation.TxFilter
}

// Committer commits blocks one at a time.
type Committer struct {
	cfg  Config
	deps Deps
	mu   sync.Mutex // blocks are committed strictly one after another
}

// ErrBadBlock wraps a block that failed verification and was not committed.
var ErrBadBlock = errors.New("committer: block rejected")

// New builds a committer.
func New(cfg Config, deps Deps) (*Committer, error) {
	if deps.Validator == nil || deps.MVCC == nil || deps.Store == nil || deps.State == nil {
		return nil, errors.New("committer: validator, MVCC, block store and state database are required")
	}
	if deps.BlockValidation == nil && !cfg.SkipBlockVerification {
		return nil, errors.New("committer: a BlockValidation policy is required")
	}
	if deps.Logf == nil {
		deps.Logf = log.Printf
	}
	return &Committer{cfg: cfg, deps: deps}, nil
}

// Height is the number of committed blocks.
func (c *Committer) Height() uint64 { return c.deps.Store.Height() }

// CommitGenesis stores block 0, the channel's configuration, as Fabric does
// when a peer joins a channel: without validation, its one transaction
// marked valid. It is a no-op if the ledger already has blocks.
func (c *Committer) CommitGenesis(genesis *cb.Block) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.deps.Store.Height() > 0 {
		return nil
	}
	if genesis.GetHeader().GetNumber() != 0 {
		return errors.New("committer: genesis block must be block 0")
	}
	b := proto.Clone(genesis).(*cb.Block)
	setFilter(b, make(validation.TxFilter, len(b.Data.Data))) // all VALID
	if err := c.deps.Store.AddBlock(b); err != nil {
		return err
	}
	if err := c.deps.State.ApplyUpdates(&statedb.UpdateBatch{}, statedb.Height{}); err != nil {
		return err
	}
	if c.deps.Metrics != nil {
		c.deps.Metrics.Height.Set(1)
	}
	return nil
}

// Recover re-applies to the state and history databases the blocks that
// reached the block store before a crash but not the state database
// (Fabric's recommitLostBlocks). The stored validation flags are reused.
func (c *Committer) Recover() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	sp, ok, err := c.deps.State.Savepoint()
	if err != nil {
		return err
	}
	next := uint64(0)
	if ok {
		next = sp.BlockNum + 1
	}
	for n := next; n < c.deps.Store.Height(); n++ {
		if n == 0 {
			if err := c.deps.State.ApplyUpdates(&statedb.UpdateBatch{}, statedb.Height{}); err != nil {
				return err
			}
			continue
		}
		b, err := c.deps.Store.BlockByNumber(n)
		if err != nil {
			return err
		}
		filter := validation.TxFilter(append([]byte{}, b.Metadata.Metadata[cb.BlockMetadataIndex_TRANSACTIONS_FILTER]...))
		batch, err := c.deps.MVCC.ValidateAndPrepare(b, filter)
		if err != nil {
			return err
		}
		if err := c.deps.State.ApplyUpdates(batch, statedb.Height{BlockNum: n}); err != nil {
			return err
		}
		if c.deps.History != nil {
			if err := c.deps.History.Commit(n, historyWrites(b, filter)); err != nil {
				return err
			}
		}
		c.deps.Logf("Channel [%s]: recommitted block [%d] to the state database", c.cfg.ChannelID, n)
	}
	return nil
}

// Commit runs the whole pipeline on the next block. A block that fails
// verification returns an error wrapping ErrBadBlock and changes nothing.
func (c *Committer) Commit(block *cb.Block) (*Stats, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	received := time.Now()
	if block == nil || block.Header == nil || block.Data == nil {
		return nil, fmt.Errorf("%w: missing header or data", ErrBadBlock)
	}
	num := block.Header.Number
	if h := c.deps.Store.Height(); num != h {
		return nil, fmt.Errorf("%w: block [%d] is not the next block [%d]", ErrBadBlock, num, h)
	}
	st := &Stats{Number: num, TxCount: len(block.Data.Data), Bytes: proto.Size(block), ReceivedNs: received.UnixNano()}

	// (a) the orderer's signature.
	if !c.cfg.SkipBlockVerification {
		if err := validation.VerifyBlock(block, c.deps.BlockValidation); err != nil {
			c.deps.Logf("Channel [%s]: rejecting block [%d]: %v", c.cfg.ChannelID, num, err)
			return nil, fmt.Errorf("%w: %v", ErrBadBlock, err)
		}
	}

	// (b) transaction validation and VSCC.
	filter, err := c.deps.Validator.Validate(block)
	if err != nil {
		return nil, fmt.Errorf("committer: validate block [%d]: %w", num, err)
	}
	st.VSCC = time.Since(received)
	c.deps.Logf("[%s] Validated block [%d] in %dms", c.cfg.ChannelID, num, st.VSCC.Milliseconds())

	// (c) MVCC, sequentially in block order ("state_validation").
	t := time.Now()
	if c.deps.StateLock != nil {
		c.deps.StateLock.Lock()
	}
	unlocked := false
	unlock := func() {
		if c.deps.StateLock != nil && !unlocked {
			unlocked = true
			c.deps.StateLock.Unlock()
		}
	}
	defer unlock()
	batch, err := c.deps.MVCC.ValidateAndPrepare(block, filter)
	if err != nil {
		return nil, fmt.Errorf("committer: MVCC block [%d]: %w", num, err)
	}
	st.MVCC = time.Since(t)
	validated := time.Now()
	st.ValidatedNs = validated.UnixNano()

	// (d) commit: block with its flags, state, history.
	setFilter(block, filter)
	t = time.Now()
	if err := c.deps.Store.AddBlock(block); err != nil {
		return nil, fmt.Errorf("committer: store block [%d]: %w", num, err)
	}
	st.BlockCommit = time.Since(t)
	t = time.Now()
	if err := c.deps.State.ApplyUpdates(batch, statedb.Height{BlockNum: num, TxNum: uint64(len(block.Data.Data))}); err != nil {
		return nil, fmt.Errorf("committer: state commit block [%d]: %w", num, err)
	}
	st.StateCommit = time.Since(t)
	unlock()
	if c.deps.History != nil {
		t = time.Now()
		if err := c.deps.History.Commit(num, historyWrites(block, filter)); err != nil {
			return nil, fmt.Errorf("committer: history commit block [%d]: %w", num, err)
		}
		st.History = time.Since(t)
	}
	committed := time.Now()
	st.CommittedNs = committed.UnixNano()
	st.Filter = filter
	for i := range filter {
		if filter.IsValid(i) {
			st.ValidCount++
		}
	}
	// Fabric's kv_ledger line: the total runs from the start of state
	// validation (VSCC is logged separately above).
	c.deps.Logf("Channel [%s]: Committed block [%d] with %d transaction(s) in %dms (state_validation=%dms block_commit=%dms state_commit=%dms)",
		c.cfg.ChannelID, num, st.TxCount, committed.Sub(t0(validated, st.MVCC)).Milliseconds(),
		st.MVCC.Milliseconds(), st.BlockCommit.Milliseconds(), st.StateCommit.Milliseconds())
	if c.deps.Metrics != nil {
		c.deps.Metrics.observe(st)
	}
	if c.deps.BlockLog != nil {
		if err := c.deps.BlockLog.Write(st); err != nil {
			c.deps.Logf("Channel [%s]: block log: %v", c.cfg.ChannelID, err)
		}
	}
	return st, nil
}

func t0(validated time.Time, mvcc time.Duration) time.Time { return validated.Add(-mvcc) }

// setFilter stores the validation codes in the block's TRANSACTIONS_FILTER
// metadata slot.
func setFilter(b *cb.Block, f validation.TxFilter) {
	if b.Metadata == nil {
		b.Metadata = &cb.BlockMetadata{}
	}
	for len(b.Metadata.Metadata) <= int(cb.BlockMetadataIndex_TRANSACTIONS_FILTER) {
		b.Metadata.Metadata = append(b.Metadata.Metadata, nil)
	}
	b.Metadata.Metadata[cb.BlockMetadataIndex_TRANSACTIONS_FILTER] = []byte(f)
}

// historyWrites takes the valid transactions apart once more, as Fabric's
// history database does, and lists the keys they wrote.
func historyWrites(b *cb.Block, filter validation.TxFilter) []history.Write {
	var out []history.Write
	for i, raw := range b.Data.Data {
		if i >= len(filter) || filter.Code(i) != pb.TxValidationCode_VALID {
			continue
		}
		t, err := validation.ParseEndorserTx(raw)
		if err != nil || t == nil {
			continue
		}
		for _, ns := range t.RWSets {
			for _, w := range ns.KV.Writes {
				out = append(out, history.Write{Namespace: ns.Namespace, Key: w.Key, TxNum: uint64(i)})
			}
		}
	}
	return out
}
