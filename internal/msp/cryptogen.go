package msp

import (
	"crypto/ecdsa"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"time"

	"fabricrepro/internal/crypto"
)

// NetworkSpec says how much crypto material to generate.
type NetworkSpec struct {
	OrdererOrgs int // orderer organizations (OrdererMSP, Orderer2MSP, ...)
	Orderers    int // orderers per orderer org
	PeerOrgs    int // peer organizations (Org1MSP, Org2MSP, ...)
	Peers       int // peers per peer org
	Clients     int // client users per peer org
}

// Org describes one generated organization.
type Org struct {
	MSPID  string
	Domain string
	Dir    string   // organization directory
	Nodes  []string // MSP directories of its nodes and users
}

// OrdererOrgName returns the i-th (0-based) orderer org's MSP ID and domain.
func OrdererOrgName(i int) (mspID, domain string) {
	if i == 0 {
		return "OrdererMSP", "orderer.example.com"
	}
	return fmt.Sprintf("Orderer%dMSP", i+1), fmt.Sprintf("orderer%d.example.com", i+1)
}

// PeerOrgName returns the i-th (0-based) peer org's MSP ID and domain.
func PeerOrgName(i int) (mspID, domain string) {
	return fmt.Sprintf("Org%dMSP", i+1), fmt.Sprintf("org%d.example.com", i+1)
}

// Generate writes CAs, node and user certificates under out in the layout of
// docs/interfaces.md (the layout of Fabric's cryptogen).
func Generate(out string, spec NetworkSpec) ([]Org, error) {
	var orgs []Org
	for i := 0; i < spec.OrdererOrgs; i++ {
		id, domain := OrdererOrgName(i)
		org, err := generateOrg(filepath.Join(out, "ordererOrganizations", domain), id, domain,
			[]member{{"orderers", "orderer", spec.Orderers, OUOrderer}})
		if err != nil {
			return nil, err
		}
		orgs = append(orgs, org)
	}
	for i := 0; i < spec.PeerOrgs; i++ {
		id, domain := PeerOrgName(i)
		org, err := generateOrg(filepath.Join(out, "peerOrganizations", domain), id, domain,
			[]member{{"peers", "peer", spec.Peers, OUPeer}, {"users", "client", spec.Clients, OUClient}})
		if err != nil {
			return nil, err
		}
		orgs = append(orgs, org)
	}
	return orgs, nil
}

type member struct {
	folder, prefix string
	count          int
	ou             string
}

func generateOrg(dir, mspID, domain string, members []member) (Org, error) {
	org := Org{MSPID: mspID, Domain: domain, Dir: dir}
	caKey, err := crypto.GenerateKey()
	if err != nil {
		return org, err
	}
	caTmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: "ca." + domain, Organization: []string{domain}},
		NotBefore:             time.Now().Add(-5 * time.Minute),
		NotAfter:              time.Now().Add(10 * 365 * 24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return org, err
	}
	caCert, _ := x509.ParseCertificate(caDER)
	caPEM := crypto.CertificatePEM(caDER)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return org, err
	}
	// The MSP ID is written beside the org so configtxgen need not guess it.
	if err := os.WriteFile(filepath.Join(dir, "mspid"), []byte(mspID+"\n"), 0o644); err != nil {
		return org, err
	}
	if err := writeKeyPair(filepath.Join(dir, "ca"), "ca-cert.pem", "ca-key.pem", caPEM, caKey); err != nil {
		return org, err
	}
	for _, m := range members {
		for i := 0; i < m.count; i++ {
			name := fmt.Sprintf("%s%d.%s", m.prefix, i, domain)
			if m.ou == OUClient {
				name = fmt.Sprintf("%s%d@%s", m.prefix, i, domain)
			}
			mspDir := filepath.Join(dir, m.folder, name, "msp")
			if err := issue(mspDir, name, domain, m.ou, caCert, caKey, caPEM); err != nil {
				return org, err
			}
			org.Nodes = append(org.Nodes, mspDir)
		}
	}
	return org, nil
}

func issue(mspDir, cn, domain, ou string, caCert *x509.Certificate, caKey *ecdsa.PrivateKey, caPEM []byte) error {
	key, err := crypto.GenerateKey()
	if err != nil {
		return err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: cn, Organization: []string{domain}, OrganizationalUnit: []string{ou}},
		NotBefore:    time.Now().Add(-5 * time.Minute),
		NotAfter:     time.Now().Add(10 * 365 * 24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &key.PublicKey, caKey)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Join(mspDir, "cacerts"), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(mspDir, "cacerts", "ca-cert.pem"), caPEM, 0o644); err != nil {
		return err
	}
	if err := writeKeyPair(mspDir, filepath.Join("signcerts", "cert.pem"), filepath.Join("keystore", "key.pem"), crypto.CertificatePEM(der), key); err != nil {
		return err
	}
	return nil
}

func writeKeyPair(dir, certName, keyName string, certPEM []byte, key *ecdsa.PrivateKey) error {
	keyPEM, err := crypto.PrivateKeyPEM(key)
	if err != nil {
		return err
	}
	for name, data := range map[string][]byte{certName: certPEM, keyName: keyPEM} {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, data, 0o600); err != nil {
			return err
		}
	}
	return nil
}

func serial() *big.Int {
	n, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	return n
}
