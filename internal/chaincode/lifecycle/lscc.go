// Package lifecycle is the reference build's minimal lifecycle system
// chaincode (lscc). Deploying a chaincode writes its ChaincodeData (name,
// version, escc, vscc, endorsement policy) into the "lscc" namespace under the
// chaincode's name, where the endorser looks chaincodes up and the
// committer's VSCC reads the endorsement policy, as in Fabric 1.2.
//
// Fabric's deploy takes (deploy, channel, ChaincodeDeploymentSpec, policy,
// escc, vscc); the reference build has no chaincode packages, so deploy here
// takes (deploy, name, version, policy) and always uses escc/vscc.
package lifecycle

import (
	"fmt"
	"regexp"

	"google.golang.org/protobuf/proto"

	"fabricrepro/internal/chaincode"
	"fabricrepro/internal/lscc"
	cb "fabricrepro/internal/protos/common"
)

// Name is the system chaincode's name (and its namespace).
const Name = lscc.Namespace

// Function names lscc accepts.
const (
	FuncDeploy    = "deploy"
	FuncGetCCData = "getccdata"
)

// Fabric 1.2's chaincode name and version rules (core/scc/lscc).
var (
	nameRE    = regexp.MustCompile(`^[a-zA-Z0-9]+([-_][a-zA-Z0-9]+)*$`)
	versionRE = regexp.MustCompile(`^[A-Za-z0-9_.+-]+$`)
)

// LSCC implements chaincode.Chaincode. If Installed is set, deploy refuses
// chaincodes it reports as not installed on this peer.
type LSCC struct {
	Installed func(name string) bool
}

// Init does nothing.
func (l *LSCC) Init(chaincode.Stub) chaincode.Response { return chaincode.Success(nil) }

// Invoke handles deploy and getccdata.
func (l *LSCC) Invoke(stub chaincode.Stub) chaincode.Response {
	args := stub.GetArgs()
	if len(args) == 0 {
		return chaincode.Errorf("lscc: no function given")
	}
	switch fn := string(args[0]); fn {
	case FuncDeploy:
		if len(args) != 4 {
			return chaincode.Errorf("lscc: deploy takes name, version and policy, got %d arguments", len(args)-1)
		}
		return l.deploy(stub, string(args[1]), string(args[2]), args[3])
	case FuncGetCCData:
		if len(args) != 2 {
			return chaincode.Errorf("lscc: getccdata takes a chaincode name")
		}
		raw, err := stub.GetState(string(args[1]))
		if err != nil {
			return chaincode.Errorf("lscc: %v", err)
		}
		if raw == nil {
			return chaincode.Errorf("could not find chaincode with name '%s'", args[1])
		}
		return chaincode.Success(raw)
	default:
		return chaincode.Errorf("lscc: invalid function %q", fn)
	}
}

func (l *LSCC) deploy(stub chaincode.Stub, name, version string, pol []byte) chaincode.Response {
	if !nameRE.MatchString(name) || name == Name {
		return chaincode.Errorf("invalid chaincode name '%s'", name)
	}
	if !versionRE.MatchString(version) {
		return chaincode.Errorf("invalid chaincode version '%s'", version)
	}
	env := &cb.SignaturePolicyEnvelope{}
	if err := proto.Unmarshal(pol, env); err != nil || env.Rule == nil {
		return chaincode.Errorf("lscc: invalid endorsement policy for '%s'", name)
	}
	if l.Installed != nil && !l.Installed(name) {
		return chaincode.Errorf("cannot get package for chaincode (%s:%s)", name, version)
	}
	existing, err := stub.GetState(name)
	if err != nil {
		return chaincode.Errorf("lscc: %v", err)
	}
	if existing != nil {
		return chaincode.Errorf("chaincode with name '%s' already exists", name)
	}
	cd := &lscc.ChaincodeData{Name: name, Version: version, Escc: "escc", Vscc: "vscc", Policy: pol}
	raw := cd.Marshal()
	if err := stub.PutState(name, raw); err != nil {
		return chaincode.Errorf("lscc: %v", err)
	}
	return chaincode.Success(raw)
}

// DeployArgs builds the arguments of a deploy invocation.
func DeployArgs(name, version string, policy *cb.SignaturePolicyEnvelope) ([][]byte, error) {
	pol, err := proto.Marshal(policy)
	if err != nil {
		return nil, fmt.Errorf("lscc: marshal policy: %w", err)
	}
	return [][]byte{[]byte(FuncDeploy), []byte(name), []byte(version), pol}, nil
}
