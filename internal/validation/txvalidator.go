package validation

import (
	"bytes"
	"errors"
	"fmt"
	"log"
	"runtime"
	"sync"

	"google.golang.org/protobuf/proto"

	"fabricrepro/internal/ledger/statedb"
	"fabricrepro/internal/msp"
	cb "fabricrepro/internal/protos/common"
	pb "fabricrepro/internal/protos/peer"
	"fabricrepro/internal/protoutil"
)

// Validator is the committer's transaction-validation stage (Fabric's
// txvalidator with VSCC): it returns one validation code per transaction of
// the block. MVCC runs afterwards and only looks at the VALID ones.
// FastFabric's parallel pipeline swaps this stage behind the interface.
type Validator interface {
	Validate(block *cb.Block) (TxFilter, error)
}

// TxIDIndex answers whether a transaction ID is already in the ledger (the
// block store's tx-ID index).
type TxIDIndex interface {
	TxIDExists(txID string) (bool, error)
}

// Config configures the transaction validator.
type Config struct {
	// ChannelID is the channel this peer commits for.
	ChannelID string
	// MSPs deserializes creators and endorsers (cached, as Fabric 1.1+).
	MSPs *msp.Manager
	// ApplicationMSPs are the channel's application organizations; a system
	// chaincode (lscc) transaction must be endorsed by a member of one of
	// them, as Fabric's GetInfoForValidate does for system chaincodes.
	ApplicationMSPs []string
	// State is the committed world state, read for the lscc entries.
	State statedb.DB
	// Ledger is the block store's tx-ID index, for DUPLICATE_TXID.
	Ledger TxIDIndex
	// Workers is the number of goroutines validating the transactions of a
	// block concurrently (Fabric 1.2's peer.validatorPoolSize, default the
	// number of CPUs).
	Workers int
	// Logf logs why a transaction was invalid (nil: log.Printf).
	Logf func(format string, args ...any)
}

// TxValidator is Fabric 1.2's txvalidator for endorser transactions.
type TxValidator struct {
	cfg  Config
	vscc *VSCC
}

var _ Validator = (*TxValidator)(nil)

// NewTxValidator builds a validator.
func NewTxValidator(cfg Config) *TxValidator {
	if cfg.Workers <= 0 {
		cfg.Workers = runtime.NumCPU()
	}
	if cfg.Logf == nil {
		cfg.Logf = log.Printf
	}
	return &TxValidator{cfg: cfg, vscc: NewVSCC(cfg.MSPs, cfg.ApplicationMSPs, cfg.State)}
}

// Validate checks every transaction of block with up to Workers goroutines
// and then marks in-block duplicate tx IDs. An error means the block could
// not be validated at all (it must not be committed).
func (v *TxValidator) Validate(block *cb.Block) (TxFilter, error) {
	if block == nil || block.Data == nil || block.Header == nil {
		return nil, errors.New("validation: nil block")
	}
	n := len(block.Data.Data)
	filter := NewTxFilter(n)
	txIDs := make([]string, n)
	var wg sync.WaitGroup
	sem := make(chan struct{}, v.cfg.Workers) // Fabric's validation workers semaphore
	for i := range block.Data.Data {
		sem <- struct{}{}
		wg.Add(1)
		go func(i int) {
			defer func() { <-sem; wg.Done() }()
			code, txID, err := v.validateTx(block.Data.Data[i])
			if code != pb.TxValidationCode_VALID {
				v.cfg.Logf("Invalid transaction in block [%d] index [%d] with code %s: %v", block.Header.Number, i, code, err)
			}
			filter.Set(i, code)
			txIDs[i] = txID
		}(i)
	}
	wg.Wait()
	// markTXIdDuplicates: the later occurrences of a tx ID within the block.
	seen := make(map[string]bool, n)
	for i, id := range txIDs {
		if id == "" || !filter.IsValid(i) {
			continue
		}
		if seen[id] {
			filter.Set(i, pb.TxValidationCode_DUPLICATE_TXID)
			v.cfg.Logf("Duplicate txid [%s] found in block [%d] at index [%d]", id, block.Header.Number, i)
			continue
		}
		seen[id] = true
	}
	return filter, nil
}

// validateTx is Fabric's validateTx for one envelope: ValidateTransaction
// (layers, header fields, creator signature, tx ID, endorser transaction
// structure), channel, duplicate tx ID against the ledger, then VSCC. It
// returns the tx ID of an otherwise valid endorser transaction.
func (v *TxValidator) validateTx(raw []byte) (pb.TxValidationCode, string, error) {
	t, code, err := unmarshalEnvelope(raw)
	if code != pb.TxValidationCode_VALID {
		return code, "", err
	}
	chdr, shdr := t.ChannelHeader, t.SignatureHeader
	if err := checkChannelHeader(chdr); err != nil {
		return pb.TxValidationCode_BAD_COMMON_HEADER, "", err
	}
	if len(shdr.Nonce) == 0 || len(shdr.Creator) == 0 {
		return pb.TxValidationCode_BAD_COMMON_HEADER, "", errors.New("invalid signature header: nonce or creator missing")
	}
	// checkSignatureFromCreator
	creator, err := v.cfg.MSPs.DeserializeIdentity(shdr.Creator)
	if err != nil {
		return pb.TxValidationCode_BAD_CREATOR_SIGNATURE, "", fmt.Errorf("creator: %w", err)
	}
	if err := creator.Verify(t.Envelope.Payload, t.Envelope.Signature); err != nil {
		return pb.TxValidationCode_BAD_CREATOR_SIGNATURE, "", fmt.Errorf("creator signature: %w", err)
	}
	switch cb.HeaderType(chdr.Type) {
	case cb.HeaderType_ENDORSER_TRANSACTION:
		if protoutil.ComputeTxID(shdr.Nonce, shdr.Creator) != chdr.TxId {
			return pb.TxValidationCode_BAD_PROPOSAL_TXID, "", fmt.Errorf("tx ID %q does not match nonce and creator", chdr.TxId)
		}
		if err := t.validateEndorserTransaction(); err != nil {
			return pb.TxValidationCode_INVALID_ENDORSER_TRANSACTION, "", err
		}
	case cb.HeaderType_CONFIG:
		// Channel reconfiguration is not part of the reference build.
		return pb.TxValidationCode_INVALID_CONFIG_TRANSACTION, "", errors.New("config transactions after the genesis block are not supported")
	default:
		return pb.TxValidationCode_UNSUPPORTED_TX_PAYLOAD, "", fmt.Errorf("unsupported transaction type %d", chdr.Type)
	}
	if chdr.ChannelId != v.cfg.ChannelID {
		return pb.TxValidationCode_TARGET_CHAIN_NOT_FOUND, "", fmt.Errorf("channel %q is not %q", chdr.ChannelId, v.cfg.ChannelID)
	}
	if v.cfg.Ledger != nil {
		dup, err := v.cfg.Ledger.TxIDExists(chdr.TxId)
		if err != nil {
			return pb.TxValidationCode_INVALID_OTHER_REASON, "", err
		}
		if dup {
			return pb.TxValidationCode_DUPLICATE_TXID, "", fmt.Errorf("duplicate transaction found [%s]", chdr.TxId)
		}
	}
	if code, err := v.vscc.Validate(raw); code != pb.TxValidationCode_VALID {
		return code, "", err
	}
	return pb.TxValidationCode_VALID, chdr.TxId, nil
}

// checkChannelHeader is Fabric 1.2's validateChannelHeader.
func checkChannelHeader(chdr *cb.ChannelHeader) error {
	switch cb.HeaderType(chdr.Type) {
	case cb.HeaderType_ENDORSER_TRANSACTION, cb.HeaderType_CONFIG_UPDATE, cb.HeaderType_CONFIG:
	default:
		return fmt.Errorf("invalid header type %d", chdr.Type)
	}
	if chdr.Epoch != 0 {
		return fmt.Errorf("invalid epoch in channel header: expected 0, got %d", chdr.Epoch)
	}
	return nil
}

// validateEndorserTransaction is Fabric's: exactly one action, a well-formed
// signature header in it, and a proposal response bound to this proposal by
// its hash.
func (t *Tx) validateEndorserTransaction() error {
	if err := t.unmarshalAction(); err != nil {
		return err
	}
	ash := &cb.SignatureHeader{}
	if err := proto.Unmarshal(t.Transaction.Actions[0].Header, ash); err != nil {
		return fmt.Errorf("bad action signature header: %w", err)
	}
	if len(ash.Nonce) == 0 || len(ash.Creator) == 0 {
		return errors.New("invalid action signature header")
	}
	hash := protoutil.ProposalHash(t.Payload.Header, t.ActionPayload.ChaincodeProposalPayload)
	if !bytes.Equal(hash, t.ResponsePayload.ProposalHash) {
		return errors.New("proposal hash does not match")
	}
	return nil
}
