// Package moneytransfer is the money-transfer chaincode of FastFabric's
// experiments (Gorenflo et al., ICBC 2019, sec. IV): accounts are created in
// an init phase, and each transfer reads and writes two account keys and
// carries a payload that pads the transaction (2.9 KB in the paper).
//
// An account's value is a compact binary encoding: the balance as an 8-byte
// big-endian signed integer, followed by the account's memo (padding bytes).
// See README.md for the functions and their arguments.
package moneytransfer

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"

	"fabricrepro/internal/chaincode"
)

// Name is the name under which the chaincode is registered and deployed.
const Name = "money-transfer"

// Function names.
const (
	FuncCreate   = "create"
	FuncTransfer = "transfer"
	FuncBalance  = "balance"
)

// Account is a decoded account value.
type Account struct {
	Balance int64
	Memo    []byte // padding carried with the account
}

// Encode returns the stored form of a.
func (a Account) Encode() []byte {
	out := make([]byte, 8+len(a.Memo))
	binary.BigEndian.PutUint64(out, uint64(a.Balance))
	copy(out[8:], a.Memo)
	return out
}

// Decode parses a stored account value.
func Decode(raw []byte) (Account, error) {
	if len(raw) < 8 {
		return Account{}, errors.New("account value shorter than 8 bytes")
	}
	return Account{Balance: int64(binary.BigEndian.Uint64(raw)), Memo: raw[8:]}, nil
}

// Chaincode implements chaincode.Chaincode.
type Chaincode struct{}

// Init does nothing: accounts are created by "create" transactions.
func (Chaincode) Init(chaincode.Stub) chaincode.Response { return chaincode.Success(nil) }

// Invoke dispatches create, transfer and balance.
func (Chaincode) Invoke(stub chaincode.Stub) chaincode.Response {
	args := stub.GetArgs()
	if len(args) == 0 {
		return chaincode.Errorf("money-transfer: no function given")
	}
	switch fn := string(args[0]); fn {
	case FuncCreate:
		return create(stub, args[1:])
	case FuncTransfer:
		return transfer(stub, args[1:])
	case FuncBalance:
		return balance(stub, args[1:])
	default:
		return chaincode.Errorf("money-transfer: unknown function %q", fn)
	}
}

// create(account, initialBalance[, padding]): the account must not exist.
func create(stub chaincode.Stub, args [][]byte) chaincode.Response {
	if len(args) != 2 && len(args) != 3 {
		return chaincode.Errorf("create takes account, balance[, padding]; got %d arguments", len(args))
	}
	bal, err := strconv.ParseInt(string(args[1]), 10, 64)
	if err != nil || bal < 0 {
		return chaincode.Errorf("create: bad initial balance %q", args[1])
	}
	acct := string(args[0])
	old, err := stub.GetState(acct)
	if err != nil {
		return chaincode.Errorf("create: %v", err)
	}
	if old != nil {
		return chaincode.Errorf("create: account %q already exists", acct)
	}
	a := Account{Balance: bal}
	if len(args) == 3 {
		a.Memo = args[2]
	}
	if err := stub.PutState(acct, a.Encode()); err != nil {
		return chaincode.Errorf("create: %v", err)
	}
	return chaincode.Success(nil)
}

// transfer(from, to, amount[, padding]): reads both accounts, writes both.
// The padding only travels with the transaction (in its proposal, and so in
// the envelope the orderer and every block carry); it is not stored, so
// account values keep their size however many transfers touch them.
func transfer(stub chaincode.Stub, args [][]byte) chaincode.Response {
	if len(args) != 3 && len(args) != 4 {
		return chaincode.Errorf("transfer takes from, to, amount[, padding]; got %d arguments", len(args))
	}
	from, to := string(args[0]), string(args[1])
	if from == to {
		return chaincode.Errorf("transfer: source and destination are both %q", from)
	}
	amount, err := strconv.ParseInt(string(args[2]), 10, 64)
	if err != nil || amount < 0 {
		return chaincode.Errorf("transfer: bad amount %q", args[2])
	}
	src, err := load(stub, from)
	if err != nil {
		return chaincode.Errorf("transfer: %v", err)
	}
	dst, err := load(stub, to)
	if err != nil {
		return chaincode.Errorf("transfer: %v", err)
	}
	if src.Balance < amount {
		return chaincode.Errorf("transfer: insufficient funds in %q: %d < %d", from, src.Balance, amount)
	}
	src.Balance -= amount
	dst.Balance += amount
	if err := stub.PutState(from, src.Encode()); err != nil {
		return chaincode.Errorf("transfer: %v", err)
	}
	if err := stub.PutState(to, dst.Encode()); err != nil {
		return chaincode.Errorf("transfer: %v", err)
	}
	return chaincode.Success(nil)
}

// balance(account): the balance as a decimal string.
func balance(stub chaincode.Stub, args [][]byte) chaincode.Response {
	if len(args) != 1 {
		return chaincode.Errorf("balance takes one account")
	}
	a, err := load(stub, string(args[0]))
	if err != nil {
		return chaincode.Errorf("balance: %v", err)
	}
	return chaincode.Success([]byte(strconv.FormatInt(a.Balance, 10)))
}

func load(stub chaincode.Stub, acct string) (Account, error) {
	raw, err := stub.GetState(acct)
	if err != nil {
		return Account{}, err
	}
	if raw == nil {
		return Account{}, fmt.Errorf("account %q does not exist", acct)
	}
	a, err := Decode(raw)
	if err != nil {
		return Account{}, fmt.Errorf("account %q: %w", acct, err)
	}
	return a, nil
}

// AccountName is the key of the i-th account that loadgen creates.
func AccountName(i int) string { return fmt.Sprintf("acct%08d", i) }

// CreateArgs builds the arguments of a create invocation.
func CreateArgs(account string, balance int64, padding []byte) [][]byte {
	args := [][]byte{[]byte(FuncCreate), []byte(account), []byte(strconv.FormatInt(balance, 10))}
	if len(padding) > 0 {
		args = append(args, padding)
	}
	return args
}

// TransferArgs builds the arguments of a transfer invocation.
func TransferArgs(from, to string, amount int64, padding []byte) [][]byte {
	args := [][]byte{[]byte(FuncTransfer), []byte(from), []byte(to), []byte(strconv.FormatInt(amount, 10))}
	if len(padding) > 0 {
		args = append(args, padding)
	}
	return args
}
