package main

import (
	"bytes"
	"encoding/json"
	"runtime"
	"sort"
	"strings"
	"testing"
	"time"
)

// TestVerifyRateOutput pins the shape of `committerbench --ecdsa-verify-rate`:
// one JSON line with exactly these keys, rates positive, cores = GOMAXPROCS.
func TestVerifyRateOutput(t *testing.T) {
	var buf bytes.Buffer
	if err := verifyRate(&buf, 50*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	if strings.Count(out, "\n") != 1 || !strings.HasSuffix(out, "\n") {
		t.Fatalf("want one JSON line, got %q", out)
	}
	var m map[string]float64
	if err := json.Unmarshal(buf.Bytes(), &m); err != nil {
		t.Fatalf("%v: %q", err, out)
	}
	var keys []string
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	want := "all_cores_verifies_per_s,cores,duration_ns,message_bytes,per_core_verifies_per_s,verifies_per_cpu_s"
	if got := strings.Join(keys, ","); got != want {
		t.Fatalf("keys %s, want %s", got, want)
	}
	if m["per_core_verifies_per_s"] <= 0 || m["all_cores_verifies_per_s"] <= 0 || m["verifies_per_cpu_s"] <= 0 {
		t.Errorf("rates must be positive: %v", m)
	}
	if int(m["cores"]) != runtime.GOMAXPROCS(0) {
		t.Errorf("cores %v, want GOMAXPROCS %d", m["cores"], runtime.GOMAXPROCS(0))
	}
	if m["duration_ns"] != float64(50*time.Millisecond) || m["message_bytes"] <= 0 {
		t.Errorf("duration_ns or message_bytes wrong: %v", m)
	}
}
