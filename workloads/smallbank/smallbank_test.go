package smallbank

import (
	"math/rand"
	"strconv"
	"testing"
)

// TestOperationArgs: every operation is drawn, with the chaincode's argument
// counts (fabric-1.1/main.go) and amounts in 1..200.
func TestOperationArgs(t *testing.T) {
	want := map[string]int{"transact_savings": 2, "deposit_checking": 2, "send_payment": 3, "write_check": 2, "amalgamate": 2}
	seen := map[string]int{}
	r := rand.New(rand.NewSource(1))
	for i := 0; i < 1000; i++ {
		a := OperationArgs(r, 3, 7)
		op := string(a[0])
		seen[op]++
		if len(a)-1 != want[op] {
			t.Fatalf("%s has %d arguments, want %d", op, len(a)-1, want[op])
		}
		if op != "amalgamate" {
			if n, err := strconv.Atoi(string(a[1])); err != nil || n < 1 || n > 200 {
				t.Fatalf("%s amount %q", op, a[1])
			}
		}
		if string(a[len(a)-1]) != "3" && string(a[len(a)-1]) != "7" {
			t.Fatalf("%s accounts %q", op, a)
		}
	}
	if len(seen) != len(want) {
		t.Errorf("operations drawn: %v", seen)
	}
	if c := CreateArgs(5); string(c[0]) != "create_account" || string(c[1]) != "5" || len(c) != 5 {
		t.Errorf("create %q", c)
	}
}
