package msp

import (
	"os"
	"path/filepath"
	"testing"
)

func TestForeignCertificateRejectedAndCacheHit(t *testing.T) {
	a, b := t.TempDir(), t.TempDir()
	if _, err := Generate(a, NetworkSpec{OrdererOrgs: 1, Orderers: 1, PeerOrgs: 1, Peers: 1, Clients: 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := Generate(b, NetworkSpec{OrdererOrgs: 1, Orderers: 1, PeerOrgs: 1, Peers: 1, Clients: 1}); err != nil {
		t.Fatal(err)
	}
	orgDir := "peerOrganizations/org1.example.com"
	ca, _ := os.ReadFile(filepath.Join(a, orgDir, "ca/ca-cert.pem"))
	m, err := New("Org1MSP", [][]byte{ca})
	if err != nil {
		t.Fatal(err)
	}
	mgr := NewManager(m)
	own, err := LoadSigningIdentity(filepath.Join(a, orgDir, "users/client0@org1.example.com/msp"), "Org1MSP")
	if err != nil {
		t.Fatal(err)
	}
	id, err := mgr.DeserializeIdentity(own.Serialize())
	if err != nil || !id.HasOU(OUClient) {
		t.Fatalf("own identity: %v", err)
	}
	again, _ := mgr.DeserializeIdentity(own.Serialize())
	if again != id {
		t.Fatal("second deserialization should come from the cache")
	}
	foreign, _ := LoadSigningIdentity(filepath.Join(b, orgDir, "users/client0@org1.example.com/msp"), "Org1MSP")
	if _, err := mgr.DeserializeIdentity(foreign.Serialize()); err == nil {
		t.Fatal("certificate of another CA accepted")
	}
	other, _ := LoadSigningIdentity(filepath.Join(a, "ordererOrganizations/orderer.example.com/orderers/orderer0.orderer.example.com/msp"), "OrdererMSP")
	if _, err := mgr.DeserializeIdentity(other.Serialize()); err == nil {
		t.Fatal("identity of an unknown MSP accepted")
	}
}
