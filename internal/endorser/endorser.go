// Package endorser is the peer's endorsing role, as Fabric 1.2's
// core/endorser: Endorser.ProcessProposal checks a signed proposal, runs the
// chaincode against the world state in a transaction simulator, and returns
// the read-write set in a ProposalResponse signed by the peer.
//
// Wiring it into a peer (cmd/peer):
//
//	reg := chaincode.NewRegistry()
//	reg.RegisterSystem(lifecycle.Name, &lifecycle.LSCC{Installed: ...})  // or let New do it
//	reg.Register(moneytransfer.Name, moneytransfer.Chaincode{})
//	e, err := endorser.New(endorser.Config{
//		ChannelID:  bundle.ChannelID,
//		Bundle:     bundle,          // channelconfig.FromGenesisBlock(genesis)
//		Signer:     peerIdentity,    // msp.LoadSigningIdentity(peer msp dir, mspID)
//		State:      stateDB,         // the committer's statedb.DB
//		Chaincodes: reg,
//		StateLock:  commitLock.RLocker(), // optional, see Config
//		TxIDExists: blockStore.TxIDExists, // optional, see Config
//	})
//	pb.RegisterEndorserServer(grpcServer, e)
//
// Every failure is answered, as in Fabric 1.2, with a ProposalResponse whose
// Response.Status is 500 and whose Message says what was wrong, and a nil
// gRPC error; a chaincode that returns an error status (>= 400) gets that
// response back unsigned. A panic inside a chaincode is recovered and
// reported the same way, so no proposal can crash the peer.
package endorser

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"fabricrepro/internal/chaincode"
	"fabricrepro/internal/chaincode/lifecycle"
	"fabricrepro/internal/channelconfig"
	"fabricrepro/internal/ledger/statedb"
	"fabricrepro/internal/ledger/txsim"
	"fabricrepro/internal/lscc"
	"fabricrepro/internal/policy"
	cb "fabricrepro/internal/protos/common"
	pb "fabricrepro/internal/protos/peer"
	"fabricrepro/internal/protoutil"
)

// Config is what an endorser needs. ChannelID, Bundle, Signer, State and
// Chaincodes are required.
type Config struct {
	// ChannelID is the one channel this peer has joined; proposals for any
	// other channel are refused.
	ChannelID string
	// Bundle is the channel's configuration: its MSPs deserialize proposal
	// creators, its Writers policy is the proposal ACL (Fabric 1.2's
	// peer/Propose resource maps to the channel's Writers).
	Bundle *channelconfig.Bundle
	// Signer is the peer's signing identity; it signs every endorsement.
	Signer protoutil.Signer
	// State is the committed world state the simulator reads.
	State statedb.DB
	// Chaincodes holds the chaincodes this peer runs. If no "lscc" is
	// registered, New registers lifecycle.LSCC (deploy checks that the
	// chaincode is registered here).
	Chaincodes *chaincode.Registry
	// StateLock, if set, is held for the duration of each simulation. Pass
	// the read side of the lock the committer takes while applying a block's
	// state updates (Fabric 1.2's txmgr commitRWLock), so that a simulation
	// never sees half a block.
	StateLock sync.Locker
	// TxIDExists, if set, reports whether a transaction ID is already in the
	// block store; such proposals are refused as duplicates, as in Fabric.
	TxIDExists func(txID string) (bool, error)
}

// Endorser implements pb.EndorserServer.
type Endorser struct {
	pb.UnimplementedEndorserServer
	cfg Config
}

var _ pb.EndorserServer = (*Endorser)(nil)

// New checks cfg and returns an endorser.
func New(cfg Config) (*Endorser, error) {
	switch {
	case cfg.ChannelID == "":
		return nil, errors.New("endorser: ChannelID is required")
	case cfg.Bundle == nil || cfg.Bundle.MSPs == nil || cfg.Bundle.Writers == nil:
		return nil, errors.New("endorser: a channel Bundle with MSPs and a Writers policy is required")
	case cfg.Signer == nil:
		return nil, errors.New("endorser: Signer is required")
	case cfg.State == nil:
		return nil, errors.New("endorser: State is required")
	case cfg.Chaincodes == nil:
		return nil, errors.New("endorser: Chaincodes is required")
	}
	if _, _, ok := cfg.Chaincodes.Lookup(lifecycle.Name); !ok {
		reg := cfg.Chaincodes
		err := reg.RegisterSystem(lifecycle.Name, &lifecycle.LSCC{Installed: func(name string) bool {
			_, sys, ok := reg.Lookup(name)
			return ok && !sys
		}})
		if err != nil {
			return nil, fmt.Errorf("endorser: %w", err)
		}
	}
	return &Endorser{cfg: cfg}, nil
}

// failure is Fabric's answer to a proposal it refuses.
func failure(err error) *pb.ProposalResponse {
	return &pb.ProposalResponse{Response: &pb.Response{Status: chaincode.Error, Message: err.Error()}}
}

// proposal is a validated, unpacked proposal.
type proposal struct {
	signed *pb.SignedProposal
	prop   *pb.Proposal
	hdr    *cb.Header
	chdr   *cb.ChannelHeader
	shdr   *cb.SignatureHeader
	ext    *pb.ChaincodeHeaderExtension
	cis    *pb.ChaincodeInvocationSpec
	// hashPayload is the ChaincodeProposalPayload bound into the response:
	// the proposal's payload without its transient map.
	hashPayload []byte
}

// ProcessProposal endorses one signed proposal. It never returns a gRPC
// error; failures are ProposalResponses with status 500.
func (e *Endorser) ProcessProposal(ctx context.Context, sp *pb.SignedProposal) (resp *pb.ProposalResponse, _ error) {
	defer func() {
		if r := recover(); r != nil {
			resp = failure(fmt.Errorf("endorser: panic while processing proposal: %v", r))
		}
	}()
	p, err := e.preProcess(sp)
	if err != nil {
		return failure(err), nil
	}
	return e.simulateAndEndorse(ctx, p), nil
}

// preProcess is Fabric 1.2's ValidateProposalMessage plus the endorser's
// channel checks: message layers, header type, signature header, creator
// identity and signature, transaction ID, chaincode header extension,
// channel, duplicate transaction ID, and the Writers ACL.
func (e *Endorser) preProcess(sp *pb.SignedProposal) (*proposal, error) {
	if sp == nil {
		return nil, errors.New("nil arguments")
	}
	p := &proposal{signed: sp, prop: &pb.Proposal{}, hdr: &cb.Header{}, chdr: &cb.ChannelHeader{}, shdr: &cb.SignatureHeader{}, ext: &pb.ChaincodeHeaderExtension{}}
	if err := proto.Unmarshal(sp.ProposalBytes, p.prop); err != nil {
		return nil, fmt.Errorf("error unmarshaling Proposal: %v", err)
	}
	if err := proto.Unmarshal(p.prop.Header, p.hdr); err != nil {
		return nil, fmt.Errorf("error unmarshaling Header: %v", err)
	}
	if err := proto.Unmarshal(p.hdr.ChannelHeader, p.chdr); err != nil {
		return nil, fmt.Errorf("error unmarshaling ChannelHeader: %v", err)
	}
	if err := proto.Unmarshal(p.hdr.SignatureHeader, p.shdr); err != nil {
		return nil, fmt.Errorf("error unmarshaling SignatureHeader: %v", err)
	}
	if p.chdr.Type != int32(cb.HeaderType_ENDORSER_TRANSACTION) {
		return nil, fmt.Errorf("invalid header type %s", cb.HeaderType(p.chdr.Type))
	}
	if p.chdr.Epoch != 0 {
		return nil, fmt.Errorf("invalid Epoch in ChannelHeader. Expected 0, got [%d]", p.chdr.Epoch)
	}
	if len(p.shdr.Nonce) == 0 {
		return nil, errors.New("invalid nonce specified in the header")
	}
	if len(p.shdr.Creator) == 0 {
		return nil, errors.New("invalid creator specified in the header")
	}
	if p.chdr.ChannelId == "" {
		return nil, errors.New("ChainID not provided")
	}
	if p.chdr.ChannelId != e.cfg.ChannelID {
		return nil, fmt.Errorf("channel does not exist: %s", p.chdr.ChannelId)
	}
	// checkSignatureFromCreator: the creator must be a valid member of one of
	// the channel's MSPs and must have signed the proposal bytes.
	creator, err := e.cfg.Bundle.MSPs.DeserializeIdentity(p.shdr.Creator)
	if err != nil {
		return nil, fmt.Errorf("access denied: channel [%s] creator org unknown, creator is malformed or not valid: %v", p.chdr.ChannelId, err)
	}
	if err := creator.Verify(sp.ProposalBytes, sp.Signature); err != nil {
		return nil, fmt.Errorf("access denied: channel [%s] creator org [%s]: the creator's signature over the proposal is not valid", p.chdr.ChannelId, creator.MSPID)
	}
	if want := protoutil.ComputeTxID(p.shdr.Nonce, p.shdr.Creator); p.chdr.TxId != want {
		return nil, fmt.Errorf("invalid txid. got [%s], expected [%s]", p.chdr.TxId, want)
	}
	if err := proto.Unmarshal(p.chdr.Extension, p.ext); err != nil {
		return nil, fmt.Errorf("invalid header extension for type CHAINCODE: %v", err)
	}
	if p.ext.ChaincodeId == nil || p.ext.ChaincodeId.Name == "" {
		return nil, errors.New("ChaincodeHeaderExtension.ChaincodeId is nil")
	}
	if p.ext.PayloadVisibility != nil {
		return nil, errors.New("invalid payload visibility field")
	}
	if e.cfg.TxIDExists != nil {
		dup, err := e.cfg.TxIDExists(p.chdr.TxId)
		if err != nil {
			return nil, fmt.Errorf("failed to check for duplicate transaction %s: %v", p.chdr.TxId, err)
		}
		if dup {
			return nil, fmt.Errorf("duplicate transaction found [%s]. Creator [%x]", p.chdr.TxId, p.shdr.Creator)
		}
	}
	// ACL peer/Propose: the channel's Writers policy over the signed proposal.
	if err := e.cfg.Bundle.Writers.Evaluate([]policy.SignedData{{Identity: p.shdr.Creator, Data: sp.ProposalBytes, Signature: sp.Signature}}); err != nil {
		return nil, fmt.Errorf("access denied for [propose][%s]: failed evaluating policy on signed data during check policy on channel [%s] with policy [%s]: %v",
			p.chdr.ChannelId, p.chdr.ChannelId, channelconfig.WritersPolicy, err)
	}
	cpp := &pb.ChaincodeProposalPayload{}
	if err := proto.Unmarshal(p.prop.Payload, cpp); err != nil {
		return nil, fmt.Errorf("error unmarshaling ChaincodeProposalPayload: %v", err)
	}
	p.cis = &pb.ChaincodeInvocationSpec{}
	if err := proto.Unmarshal(cpp.Input, p.cis); err != nil {
		return nil, fmt.Errorf("error unmarshaling ChaincodeInvocationSpec: %v", err)
	}
	if p.cis.ChaincodeSpec == nil || p.cis.ChaincodeSpec.Input == nil {
		return nil, errors.New("proposal has no chaincode input")
	}
	p.hashPayload = p.prop.Payload
	if len(cpp.TransientMap) > 0 { // Fabric's GetProposalHash1 leaves the transient map out
		cpp.TransientMap = nil
		p.hashPayload = protoutil.MarshalOrPanic(cpp)
	}
	return p, nil
}

// simulateAndEndorse runs the chaincode and signs the result.
func (e *Endorser) simulateAndEndorse(ctx context.Context, p *proposal) *pb.ProposalResponse {
	name := p.ext.ChaincodeId.Name
	cc, system, ok := e.cfg.Chaincodes.Lookup(name)
	if e.cfg.StateLock != nil {
		e.cfg.StateLock.Lock()
		defer e.cfg.StateLock.Unlock()
	}
	sim := txsim.New(e.cfg.State)
	defer sim.Done()
	ccID := &pb.ChaincodeID{Name: name}
	if !system {
		// getCDSFromLSCC: a user chaincode must be deployed on the channel.
		raw, err := sim.GetState(lscc.Namespace, name)
		if err != nil {
			return failure(fmt.Errorf("failed to obtain chaincode data for %s: %v", name, err))
		}
		if raw == nil {
			return failure(fmt.Errorf("make sure the chaincode %s has been successfully instantiated and try again: could not find chaincode with name '%s'", name, name))
		}
		cd, err := lscc.Unmarshal(raw)
		if err != nil {
			return failure(fmt.Errorf("failed to obtain chaincode data for %s: %v", name, err))
		}
		if !ok {
			return failure(fmt.Errorf("cannot retrieve package for chaincode %s/%s: chaincode is not installed on this peer", name, cd.Version))
		}
		ccID.Version = cd.Version
	} else if !ok {
		return failure(fmt.Errorf("chaincode %s not found", name))
	}
	if err := ctx.Err(); err != nil {
		return failure(err)
	}
	args := p.cis.ChaincodeSpec.Input.Args
	res := cc.Invoke(chaincode.NewStub(p.chdr.ChannelId, p.chdr.TxId, name, args, sim))
	if res.Status < chaincode.ErrorThreshold && name == lifecycle.Name && len(args) > 1 && string(args[0]) == lifecycle.FuncDeploy {
		// As Fabric's callChaincode does after an lscc deploy: run the new
		// chaincode's Init in the same simulation.
		target := string(args[1])
		if tcc, _, ok := e.cfg.Chaincodes.Lookup(target); ok {
			ir := tcc.Init(chaincode.NewStub(p.chdr.ChannelId, p.chdr.TxId, target, [][]byte{[]byte("init")}, sim))
			if ir.Status >= chaincode.ErrorThreshold {
				return failure(fmt.Errorf("init of chaincode %s failed: %s", target, ir.Message))
			}
		}
	}
	ccResp := &pb.Response{Status: res.Status, Message: res.Message, Payload: res.Payload}
	results, err := sim.GetTxSimulationResults()
	if err != nil {
		return failure(err)
	}
	if res.Status >= chaincode.ErrorThreshold {
		// Fabric's CreateProposalResponseFailure: the chaincode's error, unsigned.
		action := protoutil.MarshalOrPanic(&pb.ChaincodeAction{Results: results, Response: ccResp, ChaincodeId: ccID})
		prp := protoutil.MarshalOrPanic(&pb.ProposalResponsePayload{ProposalHash: protoutil.ProposalHash(p.hdr, p.hashPayload), Extension: action})
		return &pb.ProposalResponse{Version: 1, Timestamp: timestamppb.Now(), Response: ccResp, Payload: prp}
	}
	pr, err := protoutil.CreateProposalResponse(p.hdr, p.hashPayload, ccID, results, ccResp, e.cfg.Signer)
	if err != nil {
		return failure(fmt.Errorf("failed to sign the proposal response: %v", err))
	}
	pr.Response = &pb.Response{Status: ccResp.Status, Message: ccResp.Message, Payload: ccResp.Payload}
	return pr
}
