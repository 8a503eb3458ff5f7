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
//	CHAINCODE_ID=<package id> CHAINCODE_SERVER_ADDRESS=127.0.0.1:9999 [CHAINCODE_API=per-key|batched] money-transfer
//
// CHAINCODE_API chooses how transfer talks to the peer (Fujitsu's idea on v3.1,
// systems/fabric-3.1/README.md): "per-key" (the default) reads each account with
// GetState and writes it with PutState, four requests to the peer; "batched"
// reads both with one GetMultipleStates and writes both in one write batch
// (StartWriteBatch, PutState, PutState, FinishWriteBatch: one WRITE_BATCH_STATE),
// two requests, where the peer offers them (core.yaml
// chaincode.runtimeParams.useGetMultipleKeys / useWriteBatch; else the shim falls
// back to one request per key). Both write the same keys and values.
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

// Chaincode APIs (CHAINCODE_API).
const (
	apiPerKey  = "per-key"
	apiBatched = "batched"
)

// moneyTransfer implements shim.Chaincode; api is apiPerKey or apiBatched.
type moneyTransfer struct{ api string }

// Init does nothing: accounts are created by "create" transactions.
func (moneyTransfer) Init(shim.ChaincodeStubInterface) *pb.Response { return shim.Success(nil) }

// Invoke dispatches create, transfer and balance.
func (cc moneyTransfer) Invoke(stub shim.ChaincodeStubInterface) *pb.Response {
	args := stub.GetArgs()
	if len(args) == 0 {
		return errorf("money-transfer: no function given")
	}
	switch fn := string(args[0]); fn {
	case funcCreate:
		return create(stub, args[1:])
	case funcTransfer:
		if cc.api == apiBatched {
			return transferBatched(stub, args[1:])
		}
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

// transferArgs checks transfer's arguments: from, to, amount[, padding].
func transferArgs(args [][]byte) (from, to string, amount int64, err error) {
	if len(args) != 3 && len(args) != 4 {
		return "", "", 0, fmt.Errorf("transfer takes from, to, amount[, padding]; got %d arguments", len(args))
	}
	from, to = string(args[0]), string(args[1])
	if from == to {
		return "", "", 0, fmt.Errorf("transfer: source and destination are both %q", from)
	}
	amount, err = strconv.ParseInt(string(args[2]), 10, 64)
	if err != nil || amount < 0 {
		return "", "", 0, fmt.Errorf("transfer: bad amount %q", args[2])
	}
	return from, to, amount, nil
}

// move takes amount from src to dst, refusing an overdraft.
func move(from string, src, dst *account, amount int64) error {
	if src.balance < amount {
		return fmt.Errorf("transfer: insufficient funds in %q: %d < %d", from, src.balance, amount)
	}
	src.balance -= amount
	dst.balance += amount
	return nil
}

// transfer(from, to, amount[, padding]): reads both accounts, writes both, one
// request to the peer per key (GetState, GetState, PutState, PutState).
func transfer(stub shim.ChaincodeStubInterface, args [][]byte) *pb.Response {
	from, to, amount, err := transferArgs(args)
	if err != nil {
		return errorf("%v", err)
	}
	src, err := load(stub, from)
	if err != nil {
		return errorf("transfer: %v", err)
	}
	dst, err := load(stub, to)
	if err != nil {
		return errorf("transfer: %v", err)
	}
	if err := move(from, &src, &dst, amount); err != nil {
		return errorf("%v", err)
	}
	if err := stub.PutState(from, src.encode()); err != nil {
		return errorf("transfer: %v", err)
	}
	if err := stub.PutState(to, dst.encode()); err != nil {
		return errorf("transfer: %v", err)
	}
	return shim.Success(nil)
}

// transferBatched is transfer with v3.1's batched calls: both accounts read by
// one GetMultipleStates, both written in one write batch (FinishWriteBatch sends
// one WRITE_BATCH_STATE). The same checks, keys and values as transfer.
func transferBatched(stub shim.ChaincodeStubInterface, args [][]byte) *pb.Response {
	from, to, amount, err := transferArgs(args)
	if err != nil {
		return errorf("%v", err)
	}
	raws, err := stub.GetMultipleStates(from, to)
	if err != nil {
		return errorf("transfer: %v", err)
	}
	if len(raws) != 2 {
		return errorf("transfer: GetMultipleStates returned %d values for 2 keys", len(raws))
	}
	src, err := decodeAccount(from, raws[0])
	if err != nil {
		return errorf("transfer: %v", err)
	}
	dst, err := decodeAccount(to, raws[1])
	if err != nil {
		return errorf("transfer: %v", err)
	}
	if err := move(from, &src, &dst, amount); err != nil {
		return errorf("%v", err)
	}
	stub.StartWriteBatch()
	if err := stub.PutState(from, src.encode()); err != nil {
		return errorf("transfer: %v", err)
	}
	if err := stub.PutState(to, dst.encode()); err != nil {
		return errorf("transfer: %v", err)
	}
	if err := stub.FinishWriteBatch(); err != nil {
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
	return decodeAccount(acct, raw)
}

func decodeAccount(acct string, raw []byte) (account, error) {
	if raw == nil {
		return account{}, fmt.Errorf("account %q does not exist", acct)
	}
	a, err := decode(raw)
	if err != nil {
		return account{}, fmt.Errorf("account %q: %v", acct, err)
	}
	return a, nil
}

// chaincodeAPI is CHAINCODE_API's value ("" is per-key), or an error naming both.
func chaincodeAPI(v string) (string, error) {
	switch v {
	case "", apiPerKey:
		return apiPerKey, nil
	case apiBatched:
		return apiBatched, nil
	}
	return "", fmt.Errorf("CHAINCODE_API=%q: want %s or %s", v, apiPerKey, apiBatched)
}

func main() {
	api, err := chaincodeAPI(os.Getenv("CHAINCODE_API"))
	if err != nil {
		fmt.Fprintf(os.Stderr, "money-transfer: %v\n", err)
		os.Exit(2)
	}
	server := &shim.ChaincodeServer{
		CCID:     os.Getenv("CHAINCODE_ID"),
		Address:  os.Getenv("CHAINCODE_SERVER_ADDRESS"),
		CC:       moneyTransfer{api: api},
		TLSProps: shim.TLSProperties{Disabled: true},
	}
	if server.CCID == "" || server.Address == "" {
		fmt.Fprintln(os.Stderr, "money-transfer: set CHAINCODE_ID and CHAINCODE_SERVER_ADDRESS")
		os.Exit(2)
	}
	// the API in use, for the point's log (fabric3_chaincode.log): systems/fabric-3.1/endorsements.py reads it
	fmt.Fprintf(os.Stderr, "money-transfer: chaincode API %s\n", api)
	if err := server.Start(); err != nil {
		fmt.Fprintf(os.Stderr, "money-transfer: %v\n", err)
		os.Exit(1)
	}
}
