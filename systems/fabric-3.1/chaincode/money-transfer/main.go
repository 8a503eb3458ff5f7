// Command money-transfer is the money-transfer chaincode of FastFabric's
// experiments for Fabric v2.5 and v3.x (fabric-chaincode-go v2): the same
// functions, arguments, account encoding and messages as
// workloads/money-transfer/fabric-1.2 (and the reference build's chaincode).
//
//	create(account, initialBalance[, padding])  the account must not exist
//	transfer(from, to, amount[, padding])      reads and writes both accounts
//	balance(account)                           the balance as a decimal string
//
// It runs as a chaincode server (chaincode as a service): the peer connects to
// it at the address its package's connection.json names.
//
//	CHAINCODE_ID=<package id> CHAINCODE_SERVER_ADDRESS=127.0.0.1:9999 money-transfer
package main

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"strconv"

	"github.com/hyperledger/fabric-chaincode-go/v2/shim"
	pb "github.com/hyperledger/fabric-protos-go-apiv2/peer"
)

// Function names.
const (
	funcCreate   = "create"
	funcTransfer = "transfer"
	funcBalance  = "balance"
)

// account is a decoded account value.
type account struct {
	balance int64
	memo    []byte
}

func (a account) encode() []byte {
	out := make([]byte, 8+len(a.memo))
	binary.BigEndian.PutUint64(out, uint64(a.balance))
	copy(out[8:], a.memo)
	return out
}

func decode(raw []byte) (account, error) {
	if len(raw) < 8 {
		return account{}, errors.New("account value shorter than 8 bytes")
	}
	return account{balance: int64(binary.BigEndian.Uint64(raw)), memo: raw[8:]}, nil
}

// moneyTransfer implements shim.Chaincode.
type moneyTransfer struct{}

// Init does nothing: accounts are created by "create" transactions.
func (moneyTransfer) Init(shim.ChaincodeStubInterface) *pb.Response { return shim.Success(nil) }

// Invoke dispatches create, transfer and balance.
func (moneyTransfer) Invoke(stub shim.ChaincodeStubInterface) *pb.Response {
	args := stub.GetArgs()
	if len(args) == 0 {
		return errorf("money-transfer: no function given")
	}
	switch fn := string(args[0]); fn {
	case funcCreate:
		return create(stub, args[1:])
	case funcTransfer:
		return transfer(stub, args[1:])
	case funcBalance:
		return balance(stub, args[1:])
	default:
		return errorf("money-transfer: unknown function %q", fn)
	}
}

func errorf(format string, args ...interface{}) *pb.Response {
	return shim.Error(fmt.Sprintf(format, args...))
}

// create(account, initialBalance[, padding]): the account must not exist.
func create(stub shim.ChaincodeStubInterface, args [][]byte) *pb.Response {
	if len(args) != 2 && len(args) != 3 {
		return errorf("create takes account, balance[, padding]; got %d arguments", len(args))
	}
	bal, err := strconv.ParseInt(string(args[1]), 10, 64)
	if err != nil || bal < 0 {
		return errorf("create: bad initial balance %q", args[1])
	}
	acct := string(args[0])
	old, err := stub.GetState(acct)
	if err != nil {
		return errorf("create: %v", err)
	}
	if old != nil {
		return errorf("create: account %q already exists", acct)
	}
	a := account{balance: bal}
	if len(args) == 3 {
		a.memo = args[2]
	}
	if err := stub.PutState(acct, a.encode()); err != nil {
		return errorf("create: %v", err)
	}
	return shim.Success(nil)
}

// transfer(from, to, amount[, padding]): reads both accounts, writes both.
func transfer(stub shim.ChaincodeStubInterface, args [][]byte) *pb.Response {
	if len(args) != 3 && len(args) != 4 {
		return errorf("transfer takes from, to, amount[, padding]; got %d arguments", len(args))
	}
	from, to := string(args[0]), string(args[1])
	if from == to {
		return errorf("transfer: source and destination are both %q", from)
	}
	amount, err := strconv.ParseInt(string(args[2]), 10, 64)
	if err != nil || amount < 0 {
		return errorf("transfer: bad amount %q", args[2])
	}
	src, err := load(stub, from)
	if err != nil {
		return errorf("transfer: %v", err)
	}
	dst, err := load(stub, to)
	if err != nil {
		return errorf("transfer: %v", err)
	}
	if src.balance < amount {
		return errorf("transfer: insufficient funds in %q: %d < %d", from, src.balance, amount)
	}
	src.balance -= amount
	dst.balance += amount
	if err := stub.PutState(from, src.encode()); err != nil {
		return errorf("transfer: %v", err)
	}
	if err := stub.PutState(to, dst.encode()); err != nil {
		return errorf("transfer: %v", err)
	}
	return shim.Success(nil)
}

// balance(account): the balance as a decimal string.
func balance(stub shim.ChaincodeStubInterface, args [][]byte) *pb.Response {
	if len(args) != 1 {
		return errorf("balance takes one account")
	}
	a, err := load(stub, string(args[0]))
	if err != nil {
		return errorf("balance: %v", err)
	}
	return shim.Success([]byte(strconv.FormatInt(a.balance, 10)))
}

func load(stub shim.ChaincodeStubInterface, acct string) (account, error) {
	raw, err := stub.GetState(acct)
	if err != nil {
		return account{}, err
	}
	if raw == nil {
		return account{}, fmt.Errorf("account %q does not exist", acct)
	}
	a, err := decode(raw)
	if err != nil {
		return account{}, fmt.Errorf("account %q: %v", acct, err)
	}
	return a, nil
}

func main() {
	server := &shim.ChaincodeServer{
		CCID:     os.Getenv("CHAINCODE_ID"),
		Address:  os.Getenv("CHAINCODE_SERVER_ADDRESS"),
		CC:       moneyTransfer{},
		TLSProps: shim.TLSProperties{Disabled: true},
	}
	if server.CCID == "" || server.Address == "" {
		fmt.Fprintln(os.Stderr, "money-transfer: set CHAINCODE_ID and CHAINCODE_SERVER_ADDRESS")
		os.Exit(2)
	}
	if err := server.Start(); err != nil {
		fmt.Fprintf(os.Stderr, "money-transfer: %v\n", err)
		os.Exit(1)
	}
}
