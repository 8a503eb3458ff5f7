// Package protoutil builds and takes apart Fabric 1.2's transaction messages:
// proposals, proposal responses, endorsed transaction envelopes, and the
// hashes that chain blocks. It mirrors the message layering of Fabric's own
// protos/utils so that every layer is marshaled (and later unmarshaled) as in
// Fabric.
package protoutil

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	cb "fabricrepro/internal/protos/common"
	pb "fabricrepro/internal/protos/peer"
)

// Signer is what signs messages: a node's or client's signing identity.
type Signer interface {
	Sign(msg []byte) ([]byte, error)
	Serialize() []byte
}

// NonceSize is the length of Fabric's random nonces.
const NonceSize = 24

// NewNonce returns a fresh random nonce.
func NewNonce() []byte {
	n := make([]byte, NonceSize)
	if _, err := rand.Read(n); err != nil {
		panic(err) // the OS random source failing is not recoverable
	}
	return n
}

// ComputeTxID is Fabric's transaction ID: hex(SHA-256(nonce || creator)).
func ComputeTxID(nonce, creator []byte) string {
	h := sha256.New()
	h.Write(nonce)
	h.Write(creator)
	return hex.EncodeToString(h.Sum(nil))
}

// MarshalOrPanic marshals messages this package built itself, which cannot fail.
func MarshalOrPanic(m proto.Message) []byte {
	b, err := proto.Marshal(m)
	if err != nil {
		panic(err)
	}
	return b
}

// CreateChaincodeProposal builds an unsigned proposal that invokes ccName with
// args on channel, from creator (serialized identity).
func CreateChaincodeProposal(channel, ccName string, args [][]byte, creator []byte) (*pb.Proposal, string, error) {
	nonce := NewNonce()
	txID := ComputeTxID(nonce, creator)
	ccID := &pb.ChaincodeID{Name: ccName}
	ext := MarshalOrPanic(&pb.ChaincodeHeaderExtension{ChaincodeId: ccID})
	chdr := &cb.ChannelHeader{
		Type:      int32(cb.HeaderType_ENDORSER_TRANSACTION),
		ChannelId: channel,
		TxId:      txID,
		Timestamp: timestamppb.New(time.Now().UTC()),
		Extension: ext,
	}
	shdr := &cb.SignatureHeader{Creator: creator, Nonce: nonce}
	hdr := &cb.Header{ChannelHeader: MarshalOrPanic(chdr), SignatureHeader: MarshalOrPanic(shdr)}
	spec := &pb.ChaincodeInvocationSpec{ChaincodeSpec: &pb.ChaincodeSpec{
		Type: pb.ChaincodeSpec_GOLANG, ChaincodeId: ccID, Input: &pb.ChaincodeInput{Args: args}}}
	payload := MarshalOrPanic(&pb.ChaincodeProposalPayload{Input: MarshalOrPanic(spec)})
	return &pb.Proposal{Header: MarshalOrPanic(hdr), Payload: payload}, txID, nil
}

// SignProposal signs a proposal's bytes.
func SignProposal(prop *pb.Proposal, signer Signer) (*pb.SignedProposal, error) {
	raw := MarshalOrPanic(prop)
	sig, err := signer.Sign(raw)
	if err != nil {
		return nil, err
	}
	return &pb.SignedProposal{ProposalBytes: raw, Signature: sig}, nil
}

// ProposalHash binds a response to its proposal: SHA-256 over the channel
// header, signature header and chaincode proposal payload (Fabric's
// GetProposalHash1 with no transient data).
func ProposalHash(hdr *cb.Header, ccPropPayload []byte) []byte {
	h := sha256.New()
	h.Write(hdr.ChannelHeader)
	h.Write(hdr.SignatureHeader)
	h.Write(ccPropPayload)
	return h.Sum(nil)
}

// CreateProposalResponse is the endorser's signed answer: the simulation
// results (a marshaled TxReadWriteSet) bound to the proposal hash, signed over
// payload || endorser identity.
func CreateProposalResponse(hdr *cb.Header, ccPropPayload []byte, ccID *pb.ChaincodeID,
	results []byte, resp *pb.Response, endorser Signer) (*pb.ProposalResponse, error) {
	action := MarshalOrPanic(&pb.ChaincodeAction{Results: results, Response: resp, ChaincodeId: ccID})
	prp := MarshalOrPanic(&pb.ProposalResponsePayload{ProposalHash: ProposalHash(hdr, ccPropPayload), Extension: action})
	id := endorser.Serialize()
	sig, err := endorser.Sign(append(append([]byte{}, prp...), id...))
	if err != nil {
		return nil, err
	}
	return &pb.ProposalResponse{
		Version:     1,
		Timestamp:   timestamppb.New(time.Now().UTC()),
		Response:    &pb.Response{Status: 200, Message: "OK"},
		Payload:     prp,
		Endorsement: &pb.Endorsement{Endorser: id, Signature: sig},
	}, nil
}

// CreateSignedTx assembles endorsed responses into a transaction envelope
// signed by the proposal's creator (Fabric's CreateSignedTx).
func CreateSignedTx(prop *pb.Proposal, signer Signer, resps ...*pb.ProposalResponse) (*cb.Envelope, error) {
	if len(resps) == 0 {
		return nil, errors.New("at least one proposal response is required")
	}
	hdr := &cb.Header{}
	if err := proto.Unmarshal(prop.Header, hdr); err != nil {
		return nil, fmt.Errorf("proposal header: %w", err)
	}
	var endorsements []*pb.Endorsement
	for i, r := range resps {
		if r.Response == nil || r.Response.Status < 200 || r.Response.Status >= 400 {
			return nil, fmt.Errorf("proposal response %d was not successful", i)
		}
		if i > 0 && string(r.Payload) != string(resps[0].Payload) {
			return nil, errors.New("proposal response payloads do not match")
		}
		endorsements = append(endorsements, r.Endorsement)
	}
	actionPayload := MarshalOrPanic(&pb.ChaincodeActionPayload{
		ChaincodeProposalPayload: prop.Payload,
		Action:                   &pb.ChaincodeEndorsedAction{ProposalResponsePayload: resps[0].Payload, Endorsements: endorsements},
	})
	tx := MarshalOrPanic(&pb.Transaction{Actions: []*pb.TransactionAction{{Header: hdr.SignatureHeader, Payload: actionPayload}}})
	payload := MarshalOrPanic(&cb.Payload{Header: hdr, Data: tx})
	sig, err := signer.Sign(payload)
	if err != nil {
		return nil, err
	}
	return &cb.Envelope{Payload: payload, Signature: sig}, nil
}

// SignedEnvelope wraps data of the given header type in a payload signed by
// signer (used for config and deliver-seek envelopes).
func SignedEnvelope(typ cb.HeaderType, channel string, signer Signer, data proto.Message) (*cb.Envelope, error) {
	var creator []byte
	if signer != nil {
		creator = signer.Serialize()
	}
	nonce := NewNonce()
	chdr := &cb.ChannelHeader{Type: int32(typ), ChannelId: channel, TxId: ComputeTxID(nonce, creator),
		Timestamp: timestamppb.New(time.Now().UTC())}
	hdr := &cb.Header{ChannelHeader: MarshalOrPanic(chdr), SignatureHeader: MarshalOrPanic(&cb.SignatureHeader{Creator: creator, Nonce: nonce})}
	payload := MarshalOrPanic(&cb.Payload{Header: hdr, Data: MarshalOrPanic(data)})
	env := &cb.Envelope{Payload: payload}
	if signer != nil {
		sig, err := signer.Sign(payload)
		if err != nil {
			return nil, err
		}
		env.Signature = sig
	}
	return env, nil
}

// UnmarshalPayload takes apart an envelope's payload and its channel header.
func UnmarshalPayload(env *cb.Envelope) (*cb.Payload, *cb.ChannelHeader, *cb.SignatureHeader, error) {
	payload := &cb.Payload{}
	if err := proto.Unmarshal(env.Payload, payload); err != nil {
		return nil, nil, nil, fmt.Errorf("bad payload: %w", err)
	}
	if payload.Header == nil {
		return nil, nil, nil, errors.New("missing header")
	}
	chdr := &cb.ChannelHeader{}
	if err := proto.Unmarshal(payload.Header.ChannelHeader, chdr); err != nil {
		return nil, nil, nil, fmt.Errorf("bad channel header: %w", err)
	}
	shdr := &cb.SignatureHeader{}
	if err := proto.Unmarshal(payload.Header.SignatureHeader, shdr); err != nil {
		return nil, nil, nil, fmt.Errorf("bad signature header: %w", err)
	}
	return payload, chdr, shdr, nil
}
