package main

import (
	"strings"
	"testing"

	"fabricrepro/internal/config"
)

// TestWorkloadChecked: smallbank is a workload, anything else is refused by name.
func TestWorkloadChecked(t *testing.T) {
	base := "mspDir: d\nmspID: Org1MSP\ngenesisBlock: g\nendorsers: [a]\norderers: [o]\naccounts: 10\n"
	for _, tc := range []struct{ workload, err string }{{"smallbank", ""}, {"money-transfer", ""}, {"tpcc", "workload must be"}} {
		cfg := defaults()
		if err := config.Parse("lg.yaml", []byte(base+"workload: "+tc.workload+"\n"), &cfg); err != nil {
			t.Fatal(err)
		}
		err := cfg.check()
		if (err == nil) != (tc.err == "") || (err != nil && !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("workload %s: %v", tc.workload, err)
		}
	}
}
