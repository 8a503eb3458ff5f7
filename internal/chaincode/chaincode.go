// Package chaincode is the peer's side of the chaincode contract: the
// shim-like Stub a chaincode uses to reach the ledger, the Chaincode
// interface it implements, and a Registry of the chaincodes a peer has
// installed (user chaincodes) or built in (system chaincodes such as lscc).
//
// The Stub deliberately offers only what Fabric 1.2's shim
// (core/chaincode/shim/interfaces.go) offers through ChaincodeMessage types on
// the ChaincodeSupport stream of protos/peer/chaincode_shim.proto: GetState
// (GET_STATE), PutState (PUT_STATE), DelState (DEL_STATE), and the invocation's
// arguments and transaction ID (carried in the TRANSACTION message). A
// chaincode written against it can later run out of process: an adapter that
// implements Chaincode by forwarding Init/Invoke over that stream, and a
// client-side Stub that turns each call into the matching message, need no
// change to the chaincode itself. In process, every call is a direct method
// call on the transaction simulator.
package chaincode

import (
	"errors"
	"fmt"
	"sort"
	"sync"
	"unicode/utf8"
)

// Status codes of a Response, as Fabric's shim defines them.
const (
	OK             = 200 // success
	ErrorThreshold = 400 // statuses at or above are errors (shim.ERRORTHRESHOLD)
	Error          = 500 // generic chaincode error (shim.ERROR)
)

// Response is what Init and Invoke return, mirroring protos/peer.Response.
type Response struct {
	Status  int32
	Message string
	Payload []byte
}

// Success returns an OK response carrying payload.
func Success(payload []byte) Response { return Response{Status: OK, Payload: payload} }

// Errorf returns an error response (status 500) with a formatted message.
func Errorf(format string, args ...any) Response {
	return Response{Status: Error, Message: fmt.Sprintf(format, args...)}
}

// Stub is a chaincode's view of one invocation: its arguments and the world
// state of its own namespace, as Fabric's shim.ChaincodeStubInterface
// (restricted to the calls the reproduced workloads use).
type Stub interface {
	// GetArgs returns the invocation's arguments, the function name first.
	GetArgs() [][]byte
	// GetStringArgs returns GetArgs as strings.
	GetStringArgs() []string
	// GetFunctionAndParameters splits the string arguments into the function
	// name (the first) and its parameters.
	GetFunctionAndParameters() (function string, params []string)
	// GetTxID returns the ID of the transaction being simulated.
	GetTxID() string
	// GetChannelID returns the channel the proposal was sent on.
	GetChannelID() string
	// GetState reads key; a missing key returns (nil, nil). The read is
	// recorded with its committed version in the transaction's read set.
	GetState(key string) ([]byte, error)
	// PutState writes key in the transaction's write set (applied only when
	// the transaction commits as valid).
	PutState(key string, value []byte) error
	// DelState records the deletion of key in the write set.
	DelState(key string) error
}

// Chaincode is a smart contract: Init runs when it is deployed (where the
// deployment asks for it), Invoke for every transaction proposal.
type Chaincode interface {
	Init(stub Stub) Response
	Invoke(stub Stub) Response
}

// State is what a Stub reads and writes through: namespaced state access of
// one transaction, implemented by the transaction simulator
// (internal/ledger/txsim.Simulator).
type State interface {
	GetState(ns, key string) ([]byte, error)
	SetState(ns, key string, value []byte) error
	DeleteState(ns, key string) error
}

// NewStub returns the in-process Stub of one invocation of the chaincode
// whose namespace is ns.
func NewStub(channelID, txID, ns string, args [][]byte, st State) Stub {
	return &stub{channelID: channelID, txID: txID, ns: ns, args: args, st: st}
}

type stub struct {
	channelID, txID, ns string
	args                [][]byte
	st                  State
}

func (s *stub) GetArgs() [][]byte { return s.args }

func (s *stub) GetStringArgs() []string {
	out := make([]string, len(s.args))
	for i, a := range s.args {
		out[i] = string(a)
	}
	return out
}

func (s *stub) GetFunctionAndParameters() (string, []string) {
	a := s.GetStringArgs()
	if len(a) == 0 {
		return "", nil
	}
	return a[0], a[1:]
}

func (s *stub) GetTxID() string      { return s.txID }
func (s *stub) GetChannelID() string { return s.channelID }

func (s *stub) GetState(key string) ([]byte, error) {
	if err := checkKey(key); err != nil {
		return nil, err
	}
	return s.st.GetState(s.ns, key)
}

func (s *stub) PutState(key string, value []byte) error {
	if err := checkKey(key); err != nil {
		return err
	}
	return s.st.SetState(s.ns, key, value)
}

func (s *stub) DelState(key string) error {
	if err := checkKey(key); err != nil {
		return err
	}
	return s.st.DeleteState(s.ns, key)
}

// checkKey applies the shim's and the ledger's key rules: non-empty, valid UTF-8.
func checkKey(key string) error {
	if key == "" {
		return errors.New("key must not be an empty string")
	}
	if !utf8.ValidString(key) {
		return fmt.Errorf("key %q is not valid UTF-8", key)
	}
	return nil
}

// Registry holds the chaincodes a peer can run, by name. System chaincodes
// (lscc) are invoked without an lscc lookup; user chaincodes must also be
// deployed on the channel (an lscc entry) before the endorser runs them.
type Registry struct {
	mu     sync.RWMutex
	byName map[string]entry
}

type entry struct {
	cc     Chaincode
	system bool
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry { return &Registry{byName: map[string]entry{}} }

// Register installs a user chaincode under name.
func (r *Registry) Register(name string, cc Chaincode) error { return r.add(name, cc, false) }

// RegisterSystem installs a system chaincode (such as lscc) under name.
func (r *Registry) RegisterSystem(name string, cc Chaincode) error { return r.add(name, cc, true) }

func (r *Registry) add(name string, cc Chaincode, system bool) error {
	if name == "" || cc == nil {
		return errors.New("chaincode registry: empty name or nil chaincode")
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, dup := r.byName[name]; dup {
		return fmt.Errorf("chaincode registry: %q already registered", name)
	}
	r.byName[name] = entry{cc: cc, system: system}
	return nil
}

// Lookup returns the chaincode registered under name and whether it is a
// system chaincode; ok is false if none is.
func (r *Registry) Lookup(name string) (cc Chaincode, system, ok bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	e, ok := r.byName[name]
	return e.cc, e.system, ok
}

// Names lists the registered chaincodes, sorted.
func (r *Registry) Names() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]string, 0, len(r.byName))
	for n := range r.byName {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}
