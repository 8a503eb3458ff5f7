package validation

import (
	"errors"
	"fmt"

	"google.golang.org/protobuf/proto"

	"fabricrepro/internal/ledger/statedb"
	"fabricrepro/internal/lscc"
	"fabricrepro/internal/msp"
	"fabricrepro/internal/policy"
	pb "fabricrepro/internal/protos/peer"
)

// VSCC validates an endorser transaction against the endorsement policies of
// the chaincodes it writes to (Fabric 1.2's VSCCValidateTx with the builtin
// validation plugin).
type VSCC struct {
	msps      *msp.Manager
	sysPolicy *policy.Policy
	state     statedb.DB
}

// NewVSCC builds the VSCC stage. System chaincode (lscc) transactions use
// "any member of an application organization" as their policy.
func NewVSCC(msps *msp.Manager, appMSPs []string, state statedb.DB) *VSCC {
	sys, err := policy.Compile(policy.SignedByAnyMember(appMSPs...), msps)
	if err != nil {
		panic(fmt.Sprintf("validation: system chaincode policy: %v", err)) // a fixed, well-formed policy
	}
	return &VSCC{msps: msps, sysPolicy: sys, state: state}
}

// Validate checks the transaction in raw. Like Fabric's VSCC plugin it takes
// the envelope apart again from its bytes.
func (v *VSCC) Validate(raw []byte) (pb.TxValidationCode, error) {
	t, code, err := unmarshalEnvelope(raw)
	if code != pb.TxValidationCode_VALID {
		return code, err
	}
	ext := &pb.ChaincodeHeaderExtension{}
	if err := proto.Unmarshal(t.ChannelHeader.Extension, ext); err != nil {
		return pb.TxValidationCode_BAD_HEADER_EXTENSION, err
	}
	if err := t.unmarshalAction(); err != nil {
		return pb.TxValidationCode_BAD_RESPONSE_PAYLOAD, err
	}
	if err := t.unmarshalRWSet(); err != nil {
		return pb.TxValidationCode_BAD_RWSET, err
	}
	if ext.ChaincodeId == nil || t.Action.ChaincodeId == nil {
		return pb.TxValidationCode_INVALID_OTHER_REASON, errors.New("nil ChaincodeId in header extension or response payload")
	}
	ccID, ccVer := ext.ChaincodeId.Name, t.Action.ChaincodeId.Version
	if ccID == "" || ccID != t.Action.ChaincodeId.Name {
		return pb.TxValidationCode_INVALID_OTHER_REASON, fmt.Errorf("inconsistent chaincode name %q / %q", ccID, t.Action.ChaincodeId.Name)
	}
	// Fabric's endorser reports system chaincodes at the peer's version; the
	// reference endorser leaves it empty, and only application chaincode
	// versions are compared with lscc, so only those must be present.
	if ccVer == "" && ccID != lscc.Namespace {
		return pb.TxValidationCode_INVALID_OTHER_REASON, errors.New("invalid chaincode version in response payload")
	}
	// The namespaces the transaction writes to, each validated once.
	var written []string
	writesLSCC := false
	for _, ns := range t.RWSets {
		if len(ns.KV.Writes) == 0 && len(ns.KV.MetadataWrites) == 0 {
			continue
		}
		written = append(written, ns.Namespace)
		if ns.Namespace == lscc.Namespace {
			writesLSCC = true
		}
	}
	endorsements := t.ActionPayload.Action.Endorsements
	sigs := make([]policy.SignedData, 0, len(endorsements))
	for _, e := range endorsements {
		if e == nil {
			continue
		}
		// Signed data: proposal response payload || endorser identity.
		data := make([]byte, 0, len(t.ActionPayload.Action.ProposalResponsePayload)+len(e.Endorser))
		data = append(append(data, t.ActionPayload.Action.ProposalResponsePayload...), e.Endorser...)
		sigs = append(sigs, policy.SignedData{Identity: e.Endorser, Data: data, Signature: e.Signature})
	}

	if ccID == lscc.Namespace {
		return v.validateLSCC(t, sigs)
	}
	if writesLSCC {
		return pb.TxValidationCode_ILLEGAL_WRITESET, fmt.Errorf("chaincode %s attempted to write to the lscc namespace", ccID)
	}
	for _, ns := range written {
		cd, err := v.chaincodeData(ns)
		if err != nil {
			return pb.TxValidationCode_INVALID_OTHER_REASON, err
		}
		if ns == ccID && cd.Version != ccVer {
			return pb.TxValidationCode_EXPIRED_CHAINCODE, fmt.Errorf("chaincode %s:%s didn't match %s:%s in lscc", ccID, ccVer, cd.Name, cd.Version)
		}
		pol, err := policy.Unmarshal(cd.Policy, v.msps)
		if err != nil {
			return pb.TxValidationCode_INVALID_OTHER_REASON, fmt.Errorf("endorsement policy of %s: %w", ns, err)
		}
		if err := pol.Evaluate(sigs); err != nil {
			return pb.TxValidationCode_ENDORSEMENT_POLICY_FAILURE, fmt.Errorf("VSCC error: endorsement policy failure for %s: %w", ns, err)
		}
	}
	return pb.TxValidationCode_VALID, nil
}

// chaincodeData reads a chaincode's definition from the lscc namespace.
func (v *VSCC) chaincodeData(name string) (*lscc.ChaincodeData, error) {
	vv, err := v.state.GetState(lscc.Namespace, name)
	if err != nil {
		return nil, fmt.Errorf("could not retrieve chaincode data for %s: %w", name, err)
	}
	if vv == nil {
		return nil, fmt.Errorf("chaincode %s not found (unable to get chaincode data from ledger)", name)
	}
	cd, err := lscc.Unmarshal(vv.Value)
	if err != nil {
		return nil, err
	}
	return cd, nil
}

// validateLSCC validates a deploy through lscc: endorsed by a member of an
// application organization, writing exactly one well-formed ChaincodeData
// under its own name, for a chaincode that does not exist yet (Fabric's
// ValidateLSCCInvocation reports these as policy failures).
func (v *VSCC) validateLSCC(t *Tx, sigs []policy.SignedData) (pb.TxValidationCode, error) {
	if err := v.sysPolicy.Evaluate(sigs); err != nil {
		return pb.TxValidationCode_ENDORSEMENT_POLICY_FAILURE, fmt.Errorf("VSCC error: lscc endorsement policy failure: %w", err)
	}
	fail := func(format string, a ...any) (pb.TxValidationCode, error) {
		return pb.TxValidationCode_ENDORSEMENT_POLICY_FAILURE, fmt.Errorf("lscc: "+format, a...)
	}
	var writes int
	for _, ns := range t.RWSets {
		if len(ns.KV.Writes) == 0 {
			continue
		}
		if ns.Namespace != lscc.Namespace {
			return pb.TxValidationCode_ILLEGAL_WRITESET, fmt.Errorf("lscc transaction writes to namespace %s", ns.Namespace)
		}
		writes += len(ns.KV.Writes)
		if writes != 1 {
			return fail("expected exactly one write, got %d", len(ns.KV.Writes))
		}
		w := ns.KV.Writes[0]
		if w.IsDelete {
			return fail("deploy deletes %s", w.Key)
		}
		cd, err := lscc.Unmarshal(w.Value)
		if err != nil || cd.Name != w.Key || cd.Version == "" {
			return fail("malformed chaincode data for %s", w.Key)
		}
		if _, err := policy.Unmarshal(cd.Policy, v.msps); err != nil {
			return fail("invalid endorsement policy for %s: %v", w.Key, err)
		}
		existing, err := v.state.GetState(lscc.Namespace, w.Key)
		if err != nil {
			return pb.TxValidationCode_INVALID_OTHER_REASON, err
		}
		if existing != nil {
			return fail("chaincode %s is already instantiated", w.Key)
		}
	}
	return pb.TxValidationCode_VALID, nil
}
