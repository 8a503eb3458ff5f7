package committer

import (
	"errors"
	"path/filepath"
	"sync"

	"fabricrepro/internal/channelconfig"
	"fabricrepro/internal/ledger/blkstorage"
	"fabricrepro/internal/ledger/history"
	"fabricrepro/internal/ledger/statedb/leveldb"
	cb "fabricrepro/internal/protos/common"
	"fabricrepro/internal/validation"
)

// Ledger is one channel's baseline ledger on disk (Fabric 1.2's kvledger):
// file block store, LevelDB state and history databases under one
// directory, and the committer over them.
type Ledger struct {
	Store     *blkstorage.FileStore
	State     *leveldb.DB
	History   *history.DB
	Committer *Committer
}

// LedgerOptions are the optional parts of a ledger.
type LedgerOptions struct {
	Metrics  *Metrics
	BlockLog *BlockLog
	Logf     func(format string, args ...any)
	// StateLock is taken by the committer around MVCC and the state commit
	// (see Deps.StateLock).
	StateLock sync.Locker
	// NoSync skips fsync on block, state and history writes (tests only;
	// Fabric syncs).
	NoSync bool
}

// OpenLedger opens or creates the ledger in dir for the channel of bundle,
// commits genesis if the ledger is new, and re-applies blocks that were
// stored but not applied to the state before a crash.
func OpenLedger(dir string, cfg Config, bundle *channelconfig.Bundle, genesis *cb.Block, o LedgerOptions) (*Ledger, error) {
	l := &Ledger{}
	var err error
	if l.Store, err = blkstorage.Open(filepath.Join(dir, "chains", cfg.ChannelID), blkstorage.Options{Sync: !o.NoSync}); err != nil {
		return nil, err
	}
	if l.State, err = leveldb.Open(filepath.Join(dir, "stateLeveldb"), leveldb.Options{Sync: !o.NoSync}); err != nil {
		l.Close()
		return nil, err
	}
	if l.History, err = history.Open(filepath.Join(dir, "historyLeveldb"), !o.NoSync); err != nil {
		l.Close()
		return nil, err
	}
	if cfg.ChannelID == "" {
		cfg.ChannelID = bundle.ChannelID
	}
	if cfg.ChannelID != bundle.ChannelID {
		l.Close()
		return nil, errors.New("committer: channel ID does not match the genesis block")
	}
	val := validation.NewTxValidator(validation.Config{ChannelID: cfg.ChannelID, MSPs: bundle.MSPs,
		ApplicationMSPs: bundle.ApplicationMSPs, State: l.State, Ledger: l.Store, Workers: cfg.VSCCWorkers, Logf: o.Logf})
	l.Committer, err = New(cfg, Deps{BlockValidation: bundle.BlockValidation, Validator: val, MVCC: &validation.MVCC{DB: l.State},
		Store: l.Store, State: l.State, History: l.History, Metrics: o.Metrics, BlockLog: o.BlockLog, Logf: o.Logf, StateLock: o.StateLock})
	if err != nil {
		l.Close()
		return nil, err
	}
	if err := l.Committer.CommitGenesis(genesis); err != nil {
		l.Close()
		return nil, err
	}
	if err := l.Committer.Recover(); err != nil {
		l.Close()
		return nil, err
	}
	if o.Metrics != nil {
		o.Metrics.Height.Set(float64(l.Store.Height()))
	}
	return l, nil
}

// Close closes the stores.
func (l *Ledger) Close() error {
	var errs []error
	if l.History != nil {
		errs = append(errs, l.History.Close())
	}
	if l.State != nil {
		errs = append(errs, l.State.Close())
	}
	if l.Store != nil {
		errs = append(errs, l.Store.Close())
	}
	return errors.Join(errs...)
}
