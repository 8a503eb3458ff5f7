// Package validation is Fabric 1.2's committer-side transaction validation:
// the transaction validator (every layer of each envelope, header fields,
// creator signature, duplicate tx IDs, then VSCC against the chaincode's
// endorsement policy from the lscc namespace), run over a pool of goroutines
// within a block (core/committer/txvalidator), and the state-based MVCC
// validator that runs after it, sequentially in block order
// (core/ledger/kvledger/txmgmt/validator/statebasedval).
//
// As in Fabric 1.2, each stage unmarshals what it needs from the envelope
// bytes again (the validator, the VSCC plugin, MVCC and the history
// database each take the envelope apart): FastFabric's unmarshal cache is a
// later switch that removes exactly that repetition.
package validation

import (
	"errors"
	"fmt"

	"google.golang.org/protobuf/proto"

	cb "fabricrepro/internal/protos/common"
	"fabricrepro/internal/protos/ledger/rwset"
	"fabricrepro/internal/protos/ledger/rwset/kvrwset"
	pb "fabricrepro/internal/protos/peer"
)

// TxFilter holds one pb.TxValidationCode per transaction of a block: the
// block's TRANSACTIONS_FILTER metadata.
type TxFilter []byte

// NewTxFilter returns a filter of n transactions, all NOT_VALIDATED.
func NewTxFilter(n int) TxFilter {
	f := make(TxFilter, n)
	for i := range f {
		f[i] = byte(pb.TxValidationCode_NOT_VALIDATED)
	}
	return f
}

// Code returns transaction i's code.
func (f TxFilter) Code(i int) pb.TxValidationCode { return pb.TxValidationCode(f[i]) }

// Set sets transaction i's code.
func (f TxFilter) Set(i int, c pb.TxValidationCode) { f[i] = byte(c) }

// IsValid reports whether transaction i is VALID.
func (f TxFilter) IsValid(i int) bool { return f[i] == byte(pb.TxValidationCode_VALID) }

// NsRWSet is one namespace's key-value read-write set.
type NsRWSet struct {
	Namespace string
	KV        *kvrwset.KVRWSet
}

// Tx is an endorser transaction taken apart layer by layer.
type Tx struct {
	Envelope        *cb.Envelope
	Payload         *cb.Payload
	ChannelHeader   *cb.ChannelHeader
	SignatureHeader *cb.SignatureHeader
	Transaction     *pb.Transaction
	ActionPayload   *pb.ChaincodeActionPayload
	ResponsePayload *pb.ProposalResponsePayload
	Action          *pb.ChaincodeAction
	RWSets          []NsRWSet
}

// unmarshalEnvelope takes the outer layers apart: envelope, payload and both
// headers. The codes are those of Fabric's ValidateTransaction.
func unmarshalEnvelope(raw []byte) (*Tx, pb.TxValidationCode, error) {
	env := &cb.Envelope{}
	if err := proto.Unmarshal(raw, env); err != nil {
		// GetEnvelopeFromBlock failing is INVALID_OTHER_REASON in 1.2.
		return nil, pb.TxValidationCode_INVALID_OTHER_REASON, fmt.Errorf("error getting tx from block: %w", err)
	}
	if len(raw) == 0 {
		return nil, pb.TxValidationCode_NIL_ENVELOPE, errors.New("nil envelope")
	}
	t := &Tx{Envelope: env, Payload: &cb.Payload{}}
	if err := proto.Unmarshal(env.Payload, t.Payload); err != nil {
		return nil, pb.TxValidationCode_BAD_PAYLOAD, fmt.Errorf("bad payload: %w", err)
	}
	hdr := t.Payload.Header
	if hdr == nil {
		return nil, pb.TxValidationCode_BAD_COMMON_HEADER, errors.New("nil header")
	}
	t.ChannelHeader, t.SignatureHeader = &cb.ChannelHeader{}, &cb.SignatureHeader{}
	if err := proto.Unmarshal(hdr.ChannelHeader, t.ChannelHeader); err != nil {
		return nil, pb.TxValidationCode_BAD_COMMON_HEADER, fmt.Errorf("bad channel header: %w", err)
	}
	if err := proto.Unmarshal(hdr.SignatureHeader, t.SignatureHeader); err != nil {
		return nil, pb.TxValidationCode_BAD_COMMON_HEADER, fmt.Errorf("bad signature header: %w", err)
	}
	return t, pb.TxValidationCode_VALID, nil
}

// unmarshalAction takes apart the endorser transaction inside a payload:
// Transaction → ChaincodeActionPayload → ProposalResponsePayload →
// ChaincodeAction (Fabric's GetPayloads). The rwset stays marshaled.
func (t *Tx) unmarshalAction() error {
	t.Transaction = &pb.Transaction{}
	if err := proto.Unmarshal(t.Payload.Data, t.Transaction); err != nil {
		return fmt.Errorf("bad transaction: %w", err)
	}
	if len(t.Transaction.Actions) == 0 {
		return errors.New("at least one TransactionAction required")
	}
	if len(t.Transaction.Actions) != 1 {
		return errors.New("only one action per transaction is supported")
	}
	act := t.Transaction.Actions[0]
	if act == nil {
		return errors.New("nil action")
	}
	t.ActionPayload = &pb.ChaincodeActionPayload{}
	if err := proto.Unmarshal(act.Payload, t.ActionPayload); err != nil {
		return fmt.Errorf("bad chaincode action payload: %w", err)
	}
	if t.ActionPayload.Action == nil || t.ActionPayload.Action.ProposalResponsePayload == nil {
		return errors.New("no payload in ChaincodeActionPayload")
	}
	t.ResponsePayload = &pb.ProposalResponsePayload{}
	if err := proto.Unmarshal(t.ActionPayload.Action.ProposalResponsePayload, t.ResponsePayload); err != nil {
		return fmt.Errorf("bad proposal response payload: %w", err)
	}
	if t.ResponsePayload.Extension == nil {
		return errors.New("response payload is missing extension")
	}
	t.Action = &pb.ChaincodeAction{}
	if err := proto.Unmarshal(t.ResponsePayload.Extension, t.Action); err != nil {
		return fmt.Errorf("bad chaincode action: %w", err)
	}
	return nil
}

// unmarshalRWSet decodes the action's TxReadWriteSet and each namespace's
// KVRWSet (Fabric's rwsetutil.TxRwSet.FromProtoBytes).
func (t *Tx) unmarshalRWSet() error {
	txrw := &rwset.TxReadWriteSet{}
	if err := proto.Unmarshal(t.Action.Results, txrw); err != nil {
		return fmt.Errorf("bad TxReadWriteSet: %w", err)
	}
	t.RWSets = t.RWSets[:0]
	for _, ns := range txrw.NsRwset {
		kv := &kvrwset.KVRWSet{}
		if err := proto.Unmarshal(ns.Rwset, kv); err != nil {
			return fmt.Errorf("bad KVRWSet of %s: %w", ns.Namespace, err)
		}
		t.RWSets = append(t.RWSets, NsRWSet{Namespace: ns.Namespace, KV: kv})
	}
	return nil
}

// ParseEndorserTx unmarshals every layer of an endorser transaction down to
// its KVRWSets, without checking signatures. It is what MVCC and the history
// database call to get at the read-write set, as Fabric's
// preprocessProtoBlock and historyleveldb.Commit do on their own.
func ParseEndorserTx(raw []byte) (*Tx, error) {
	t, code, err := unmarshalEnvelope(raw)
	if code != pb.TxValidationCode_VALID {
		return nil, err
	}
	if t.ChannelHeader.Type != int32(cb.HeaderType_ENDORSER_TRANSACTION) {
		return t, nil
	}
	if err := t.unmarshalAction(); err != nil {
		return nil, err
	}
	if err := t.unmarshalRWSet(); err != nil {
		return nil, err
	}
	return t, nil
}
