// Package smallbank holds the client side of the smallbank workload: the
// transactions of Hyperledger Caliper's smallbank benchmark
// (caliper-benchmarks, benchmarks/scenario/smallbank/utils/smallbank.js), as
// argument lists of the smallbank chaincode (fabric-1.1/main.go). bin/loadgen
// uses it in its smallbank mode; Caliper itself uses its own modules.
package smallbank

import (
	"math/rand"
	"strconv"
)

// InitialBalance of both balances of a new account (Caliper's InitialBalance).
const InitialBalance = 1_000_000

// Operations are the modifying operations Caliper's smallbank "modify" round
// picks from, uniformly (its OperationTypes).
var Operations = []string{"transact_savings", "deposit_checking", "send_payment", "write_check", "amalgamate"}

// maxAmount bounds an operation's random amount (Caliper: 1..200).
const maxAmount = 200

// AccountID is the customer id of account i (Caliper numbers its accounts).
func AccountID(i int) string { return strconv.Itoa(i) }

// CreateArgs is create_account of account i with Caliper's initial balances
// (its name is a fixed function of i rather than Caliper's random string).
func CreateArgs(i int) [][]byte {
	b := strconv.Itoa(InitialBalance)
	return args("create_account", AccountID(i), "customer"+AccountID(i), b, b)
}

// OperationArgs draws one operation and its amount from r, as Caliper's
// modify round does, over accounts a and b (two different accounts; the
// one-account operations use a). The arguments are in the chaincode's order.
func OperationArgs(r *rand.Rand, a, b int) [][]byte {
	op := Operations[r.Intn(len(Operations))]
	amount := strconv.Itoa(1 + r.Intn(maxAmount))
	switch op {
	case "send_payment": // amount, dest, source
		return args(op, amount, AccountID(a), AccountID(b))
	case "amalgamate": // dest, source
		return args(op, AccountID(a), AccountID(b))
	default: // amount, customer
		return args(op, amount, AccountID(a))
	}
}

func args(fn string, rest ...string) [][]byte {
	out := [][]byte{[]byte(fn)}
	for _, s := range rest {
		out = append(out, []byte(s))
	}
	return out
}
