package lscc

import (
	"bytes"
	"testing"
)

func TestChaincodeDataRoundTrip(t *testing.T) {
	cd := &ChaincodeData{Name: "money", Version: "1.0", Escc: "escc", Vscc: "vscc", Policy: []byte{1, 2, 3}}
	got, err := Unmarshal(cd.Marshal())
	if err != nil || got.Name != "money" || got.Version != "1.0" || got.Vscc != "vscc" || !bytes.Equal(got.Policy, cd.Policy) {
		t.Fatalf("got %+v err %v", got, err)
	}
	if _, err := Unmarshal([]byte{0x0a, 0x05, 'a'}); err == nil {
		t.Fatal("truncated input accepted")
	}
}
