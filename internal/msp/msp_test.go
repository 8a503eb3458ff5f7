package msp

import (
	"crypto/sha256"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"fabricrepro/internal/crypto"
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

// fabricLayout rewrites a generated MSP directory into the layout of Fabric
// 1.2's cryptogen: signcerts/<name>-cert.pem, and in keystore/ the key as
// PKCS#8 named <hex SKI>_sk beside another key of the same organization.
func fabricLayout(t *testing.T, mspDir, name, otherKey string) {
	t.Helper()
	if err := os.Rename(filepath.Join(mspDir, "signcerts", "cert.pem"), filepath.Join(mspDir, "signcerts", name+"-cert.pem")); err != nil {
		t.Fatal(err)
	}
	for i, src := range []string{filepath.Join(mspDir, "keystore", "key.pem"), otherKey} {
		key, err := crypto.LoadPrivateKey(src)
		if err != nil {
			t.Fatal(err)
		}
		der, err := x509.MarshalPKCS8PrivateKey(key)
		if err != nil {
			t.Fatal(err)
		}
		pub, err := key.PublicKey.ECDH()
		if err != nil {
			t.Fatal(err)
		}
		ski := sha256.Sum256(pub.Bytes()) // Fabric's SKI: SHA-256 of the uncompressed point
		// name the decoy so that it sorts first
		file := fmt.Sprintf("%x_sk", ski)
		if i == 1 {
			file = "0" + file
		}
		if err := os.WriteFile(filepath.Join(mspDir, "keystore", file), pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Remove(filepath.Join(mspDir, "keystore", "key.pem")); err != nil {
		t.Fatal(err)
	}
}

func TestLoadSigningIdentityInFabricCryptogenLayout(t *testing.T) {
	dir := t.TempDir()
	if _, err := Generate(dir, NetworkSpec{OrdererOrgs: 1, Orderers: 1, PeerOrgs: 1, Peers: 1, Clients: 1}); err != nil {
		t.Fatal(err)
	}
	org := filepath.Join(dir, "peerOrganizations/org1.example.com")
	user := filepath.Join(org, "users/client0@org1.example.com/msp")
	fabricLayout(t, user, "User1@org1.example.com", filepath.Join(org, "peers/peer0.org1.example.com/msp/keystore/key.pem"))

	signer, err := LoadSigningIdentity(user, "Org1MSP")
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := os.ReadFile(filepath.Join(org, "ca/ca-cert.pem"))
	m, err := New("Org1MSP", [][]byte{ca})
	if err != nil {
		t.Fatal(err)
	}
	id, err := NewManager(m).DeserializeIdentity(signer.Serialize())
	if err != nil {
		t.Fatal(err)
	}
	sig, err := signer.Sign([]byte("msg"))
	if err != nil || id.Verify([]byte("msg"), sig) != nil {
		t.Fatalf("signature of the loaded key does not verify with the certificate: %v", err)
	}

	// Two certificates in signcerts/ are ambiguous, as in Fabric.
	extra := filepath.Join(user, "signcerts", "other-cert.pem")
	if err := os.WriteFile(extra, ca, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadSigningIdentity(user, "Org1MSP"); err == nil || !strings.Contains(err.Error(), "found 2 files") {
		t.Fatalf("two signing certificates accepted: %v", err)
	}
	os.Remove(extra)
	// No key of the certificate in keystore/: keep only the decoy, "0" + its 64-digit SKI + "_sk" (the
	// certificate's own key file may start with "0" too: its SKI does one time in 16).
	files, _ := os.ReadDir(filepath.Join(user, "keystore"))
	for _, f := range files {
		if !strings.HasPrefix(f.Name(), "0") || len(f.Name()) != len("0")+64+len("_sk") {
			os.Remove(filepath.Join(user, "keystore", f.Name()))
		}
	}
	if _, err := LoadSigningIdentity(user, "Org1MSP"); err == nil || !strings.Contains(err.Error(), "no private key matches") {
		t.Fatalf("a key of another identity accepted: %v", err)
	}
}
