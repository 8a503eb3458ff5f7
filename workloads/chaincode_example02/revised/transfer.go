// The paper's transfer chaincode with the revised API (Miyamae et al. 2017,
// seed 003 Sec. III): chaincode_example02 of Fabric v0.6.1 whose invoke sends
// one Compound Request holding two Differential Updates instead of two
// GetState and two PutState ("we can combine two DUS functions into one CR
// function", line 108). Init, query and delete are chaincode_example02's.
// Builds only against the v0.6.1 shim with systems/fujitsu-api's DUS and CR
// patches (flavour cr).
package main

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/hyperledger/fabric/core/chaincode/shim"
)

// Transfer is chaincode_example02 with the revised API.
type Transfer struct{}

// Init creates two accounts: args A, Aval, B, Bval (as chaincode_example02).
func (t *Transfer) Init(stub shim.ChaincodeStubInterface, function string, args []string) ([]byte, error) {
	if len(args) != 4 {
		return nil, errors.New("Incorrect number of arguments. Expecting 4")
	}
	for _, i := range []int{1, 3} {
		if _, err := strconv.Atoi(args[i]); err != nil {
			return nil, errors.New("Expecting integer value for asset holding")
		}
	}
	if err := stub.PutState(args[0], []byte(args[1])); err != nil {
		return nil, err
	}
	return nil, stub.PutState(args[2], []byte(args[3]))
}

// Invoke moves X units from A to B (args A, B, X) with one CR of two DUS, or
// deletes an account (function "delete", as chaincode_example02).
func (t *Transfer) Invoke(stub shim.ChaincodeStubInterface, function string, args []string) ([]byte, error) {
	if function == "delete" {
		if len(args) != 1 {
			return nil, errors.New("Incorrect number of arguments. Expecting 1")
		}
		return nil, stub.DelState(args[0])
	}
	if len(args) != 3 {
		return nil, errors.New("Incorrect number of arguments. Expecting 3")
	}
	if _, err := strconv.Atoi(args[2]); err != nil {
		return nil, errors.New("Invalid transaction amount, expecting a integer value")
	}
	// The peer fails the request (and writes nothing) if an account is missing.
	return nil, stub.Compound(shim.DiffItem(args[0], "-", args[2]), shim.DiffItem(args[1], "+", args[2]))
}

// Query returns an account's balance (function "query", as chaincode_example02).
func (t *Transfer) Query(stub shim.ChaincodeStubInterface, function string, args []string) ([]byte, error) {
	if function != "query" {
		return nil, errors.New("Invalid query function name. Expecting \"query\"")
	}
	if len(args) != 1 {
		return nil, errors.New("Incorrect number of arguments. Expecting name of the person to query")
	}
	value, err := stub.GetState(args[0])
	if err != nil {
		return nil, fmt.Errorf("{\"Error\":\"Failed to get state for %s\"}", args[0])
	}
	if value == nil {
		return nil, fmt.Errorf("{\"Error\":\"Nil amount for %s\"}", args[0])
	}
	return value, nil
}

func main() {
	if err := shim.Start(new(Transfer)); err != nil {
		fmt.Printf("Error starting the transfer chaincode: %s", err)
	}
}
