// Command smallbank is the smallbank chaincode of the validation-phase paper's
// experiments (Javaid et al., Sec. III-B: "the smallbank benchmark from
// Hyperledger Caliper"), written for Fabric 1.1's chaincode shim. Its
// functions, arguments, key layout and stored value are those of Caliper's
// smallbank chaincode (hyperledger/caliper-benchmarks,
// src/fabric/scenario/smallbank/go/smallbank.go), so that Caliper's smallbank
// workload modules drive it unchanged; the code is ours (see README.md).
//
//	create_account(id, name, checking, savings)  the account must not exist
//	deposit_checking(amount, id)                  checking += amount
//	write_check(amount, id)                       checking -= amount
//	transact_savings(amount, id)                  savings += amount
//	send_payment(amount, dest, source)            source.checking -= amount, dest.checking += amount
//	amalgamate(dest, source)                      dest.checking += source.savings, source.savings = 0
//	query(id)                                     the account's JSON
//
// An account is stored as JSON {"CustomId","CustomName","SavingsBalance",
// "CheckingBalance"} under the key sha512hex("smallbank")[:6] +
// sha512hex(id)[:64]. Amounts are integers; like Caliper's chaincode it lets
// balances go negative.
//
// It runs as a process beside a peer in development mode:
//
//	CORE_CHAINCODE_ID_NAME=smallbank:1.0 CORE_PEER_ADDRESS=<peer chaincode address> smallbank
package main

import (
	"crypto/sha512"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"strconv"

	"github.com/hyperledger/fabric/core/chaincode/shim"
	pb "github.com/hyperledger/fabric/protos/peer"
)

// Account is the stored value (Caliper's field names: its query results are JSON of this).
type Account struct {
	CustomId        string
	CustomName      string
	SavingsBalance  int
	CheckingBalance int
}

// keyPrefix keeps smallbank's keys in a range of their own, as Caliper's chaincode does.
var keyPrefix = hexDigest("smallbank")[:6]

func hexDigest(s string) string {
	h := sha512.Sum512([]byte(s))
	return hex.EncodeToString(h[:])
}

// AccountKey is the state key of customer id.
func AccountKey(id string) string { return keyPrefix + hexDigest(id)[:64] }

// Smallbank implements shim.Chaincode.
type Smallbank struct{}

// Init does nothing: accounts are made by create_account.
func (Smallbank) Init(shim.ChaincodeStubInterface) pb.Response { return shim.Success(nil) }

// Invoke dispatches on the function name.
func (Smallbank) Invoke(stub shim.ChaincodeStubInterface) pb.Response {
	fn, args := stub.GetFunctionAndParameters()
	op, ok := operations[fn]
	if !ok {
		return shim.Error("unknown function " + fn)
	}
	if len(args) != op.args {
		return shim.Error(fmt.Sprintf("%s takes %d arguments, got %d", fn, op.args, len(args)))
	}
	return op.run(stub, args)
}

type operation struct {
	args int
	run  func(shim.ChaincodeStubInterface, []string) pb.Response
}

var operations = map[string]operation{
	"create_account":   {4, createAccount},
	"deposit_checking": {2, func(s shim.ChaincodeStubInterface, a []string) pb.Response { return adjust(s, a, 1, 0) }},
	"write_check":      {2, func(s shim.ChaincodeStubInterface, a []string) pb.Response { return adjust(s, a, -1, 0) }},
	"transact_savings": {2, func(s shim.ChaincodeStubInterface, a []string) pb.Response { return adjust(s, a, 0, 1) }},
	"send_payment":     {3, sendPayment},
	"amalgamate":       {2, amalgamate},
	"query":            {1, query},
}

func createAccount(stub shim.ChaincodeStubInterface, a []string) pb.Response {
	old, err := stub.GetState(AccountKey(a[0]))
	if err != nil {
		return shim.Error(err.Error())
	}
	if old != nil {
		return shim.Error("account " + a[0] + " exists")
	}
	checking, err1 := strconv.Atoi(a[2])
	savings, err2 := strconv.Atoi(a[3])
	if err1 != nil || err2 != nil {
		return shim.Error("balances must be integers")
	}
	return done(save(stub, &Account{CustomId: a[0], CustomName: a[1], CheckingBalance: checking, SavingsBalance: savings}))
}

// adjust adds amount (a[0]) times the signs to account a[1]'s checking and savings.
func adjust(stub shim.ChaincodeStubInterface, a []string, checkingSign, savingsSign int) pb.Response {
	amount, err := strconv.Atoi(a[0])
	if err != nil {
		return shim.Error("amount must be an integer")
	}
	acc, err := load(stub, a[1])
	if err != nil {
		return shim.Error(err.Error())
	}
	acc.CheckingBalance += checkingSign * amount
	acc.SavingsBalance += savingsSign * amount
	return done(save(stub, acc))
}

func sendPayment(stub shim.ChaincodeStubInterface, a []string) pb.Response {
	amount, err := strconv.Atoi(a[0])
	if err != nil {
		return shim.Error("amount must be an integer")
	}
	dest, src, err := loadPair(stub, a[1], a[2])
	if err != nil {
		return shim.Error(err.Error())
	}
	src.CheckingBalance -= amount
	dest.CheckingBalance += amount
	return savePair(stub, src, dest)
}

func amalgamate(stub shim.ChaincodeStubInterface, a []string) pb.Response {
	dest, src, err := loadPair(stub, a[0], a[1])
	if err != nil {
		return shim.Error(err.Error())
	}
	dest.CheckingBalance += src.SavingsBalance
	src.SavingsBalance = 0
	return savePair(stub, src, dest)
}

func query(stub shim.ChaincodeStubInterface, a []string) pb.Response {
	raw, err := stub.GetState(AccountKey(a[0]))
	if err != nil {
		return shim.Error(err.Error())
	}
	if raw == nil {
		return shim.Error("no account " + a[0])
	}
	return shim.Success(raw)
}

func load(stub shim.ChaincodeStubInterface, id string) (*Account, error) {
	raw, err := stub.GetState(AccountKey(id))
	if err != nil {
		return nil, err
	}
	if raw == nil {
		return nil, fmt.Errorf("no account %s", id)
	}
	acc := &Account{}
	if err := json.Unmarshal(raw, acc); err != nil {
		return nil, fmt.Errorf("account %s: %s", id, err)
	}
	return acc, nil
}

func loadPair(stub shim.ChaincodeStubInterface, dest, src string) (*Account, *Account, error) {
	d, err := load(stub, dest)
	if err != nil {
		return nil, nil, err
	}
	s, err := load(stub, src)
	return d, s, err
}

func save(stub shim.ChaincodeStubInterface, acc *Account) error {
	raw, err := json.Marshal(acc)
	if err != nil {
		return err
	}
	return stub.PutState(AccountKey(acc.CustomId), raw)
}

// savePair writes the source before the destination (when they are the same
// account the destination's update wins, as in Caliper's chaincode).
func savePair(stub shim.ChaincodeStubInterface, src, dest *Account) pb.Response {
	if err := save(stub, src); err != nil {
		return shim.Error(err.Error())
	}
	return done(save(stub, dest))
}

func done(err error) pb.Response {
	if err != nil {
		return shim.Error(err.Error())
	}
	return shim.Success(nil)
}

func main() {
	if err := shim.Start(Smallbank{}); err != nil {
		fmt.Fprintf(os.Stderr, "smallbank: %s\n", err)
		os.Exit(1)
	}
}
