// Package msp is the reference build's membership service provider: X.509
// identities with ECDSA P-256 keys, verified against their organization's CA,
// with deserialized identities cached as Fabric 1.1+ does (Fabric's cachedMSP).
package msp

import (
	"crypto/ecdsa"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"sync"

	"google.golang.org/protobuf/proto"

	"fabricrepro/internal/crypto"
	mspproto "fabricrepro/internal/protos/msp"
)

// Node roles carried in a certificate's OrganizationalUnit, as Fabric's NodeOUs.
const (
	OUPeer    = "peer"
	OUClient  = "client"
	OUOrderer = "orderer"
)

// Identity is a deserialized, validated member of an MSP.
type Identity struct {
	MSPID      string
	Cert       *x509.Certificate
	Serialized []byte // the SerializedIdentity bytes this identity came from
	pub        *ecdsa.PublicKey
}

// Verify checks sig over msg with the identity's public key.
func (id *Identity) Verify(msg, sig []byte) error { return crypto.Verify(id.pub, msg, sig) }

// HasOU reports whether the certificate carries the organizational unit ou.
func (id *Identity) HasOU(ou string) bool {
	for _, u := range id.Cert.Subject.OrganizationalUnit {
		if u == ou {
			return true
		}
	}
	return false
}

// SigningIdentity is an identity with its private key: what a node or client
// signs with.
type SigningIdentity struct {
	Identity
	key *ecdsa.PrivateKey
}

// Sign signs msg (SHA-256, ECDSA, low-S).
func (s *SigningIdentity) Sign(msg []byte) ([]byte, error) { return crypto.Sign(s.key, msg) }

// Serialize returns the SerializedIdentity bytes that go into headers.
func (s *SigningIdentity) Serialize() []byte { return s.Serialized }

// LoadSigningIdentity reads an MSP directory: the signing certificate in
// signcerts/ and its private key in keystore/. Both layouts are read: this
// repository's cryptogen (signcerts/cert.pem, keystore/key.pem) and Fabric's
// (signcerts/<name>-cert.pem, keystore/<ski>_sk), as Fabric does: the one
// certificate in signcerts/, and the key in keystore/ that belongs to it.
func LoadSigningIdentity(mspDir, mspID string) (*SigningIdentity, error) {
	certPath, err := signCertFile(filepath.Join(mspDir, "signcerts"))
	if err != nil {
		return nil, fmt.Errorf("msp %s: %w", mspDir, err)
	}
	certPEM, err := os.ReadFile(certPath)
	if err != nil {
		return nil, fmt.Errorf("msp %s: %w", mspDir, err)
	}
	cert, err := crypto.ParseCertificatePEM(certPEM)
	if err != nil {
		return nil, fmt.Errorf("msp %s: signcert: %w", mspDir, err)
	}
	pub, ok := cert.PublicKey.(*ecdsa.PublicKey)
	if !ok {
		return nil, fmt.Errorf("msp %s: signcert key is not ECDSA", mspDir)
	}
	key, err := keyOf(filepath.Join(mspDir, "keystore"), pub)
	if err != nil {
		return nil, fmt.Errorf("msp %s: key: %w", mspDir, err)
	}
	ser, err := proto.Marshal(&mspproto.SerializedIdentity{Mspid: mspID, IdBytes: certPEM})
	if err != nil {
		return nil, err
	}
	return &SigningIdentity{Identity: Identity{MSPID: mspID, Cert: cert, Serialized: ser, pub: pub}, key: key}, nil
}

// signCertFile is signcerts/cert.pem, or else the only file in signcerts/.
func signCertFile(dir string) (string, error) {
	if p := filepath.Join(dir, "cert.pem"); fileExists(p) {
		return p, nil
	}
	files, err := regularFiles(dir)
	if err != nil {
		return "", err
	}
	if len(files) != 1 {
		return "", fmt.Errorf("%s: want one signing certificate, found %d files", dir, len(files))
	}
	return files[0], nil
}

// keyOf is keystore/key.pem, or else the key in keystore/ whose public key is
// pub (Fabric's cryptogen names it after the key's SKI, <ski>_sk).
func keyOf(dir string, pub *ecdsa.PublicKey) (*ecdsa.PrivateKey, error) {
	if p := filepath.Join(dir, "key.pem"); fileExists(p) {
		key, err := crypto.LoadPrivateKey(p)
		if err != nil {
			return nil, err
		}
		if !pub.Equal(&key.PublicKey) {
			return nil, errors.New("key does not match certificate")
		}
		return key, nil
	}
	files, err := regularFiles(dir)
	if err != nil {
		return nil, err
	}
	for _, f := range files {
		if key, err := crypto.LoadPrivateKey(f); err == nil && pub.Equal(&key.PublicKey) {
			return key, nil
		}
	}
	return nil, fmt.Errorf("%s: no private key matches the signing certificate (%d files)", dir, len(files))
}

func fileExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular()
}

// regularFiles lists the regular files of dir (following symlinks), sorted.
func regularFiles(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range entries {
		if p := filepath.Join(dir, e.Name()); fileExists(p) {
			out = append(out, p)
		}
	}
	return out, nil
}

// MSP verifies that certificates chain to one organization's root CAs.
type MSP struct {
	ID        string
	RootCerts [][]byte // PEM, as carried in FabricMSPConfig.RootCerts
	roots     *x509.CertPool
}

// New builds an MSP from its root CA certificates (PEM).
func New(id string, rootCertsPEM [][]byte) (*MSP, error) {
	if len(rootCertsPEM) == 0 {
		return nil, fmt.Errorf("msp %s: no root certificates", id)
	}
	pool := x509.NewCertPool()
	for _, p := range rootCertsPEM {
		c, err := crypto.ParseCertificatePEM(p)
		if err != nil {
			return nil, fmt.Errorf("msp %s: root cert: %w", id, err)
		}
		pool.AddCert(c)
	}
	return &MSP{ID: id, RootCerts: rootCertsPEM, roots: pool}, nil
}

// Validate checks that cert chains to one of the MSP's roots.
func (m *MSP) Validate(cert *x509.Certificate) error {
	_, err := cert.Verify(x509.VerifyOptions{
		Roots:       m.roots,
		CurrentTime: cert.NotBefore, // Fabric 1.2 validates at the cert's own NotBefore
		KeyUsages:   []x509.ExtKeyUsage{x509.ExtKeyUsageAny},
	})
	if err != nil {
		return fmt.Errorf("certificate not valid for MSP %s: %w", m.ID, err)
	}
	return nil
}

// DefaultCacheSize is Fabric 1.2's deserializeIdentityCacheSize.
const DefaultCacheSize = 100

// Manager deserializes identities of all MSPs of a channel and caches the
// result, so a repeated creator or endorser costs one map lookup instead of a
// certificate parse and chain verification (Fabric 1.1+).
type Manager struct {
	msps      map[string]*MSP
	mu        sync.RWMutex
	cache     map[string]*Identity
	order     []string // FIFO eviction order
	cacheSize int
}

// NewManager builds a manager over the given MSPs with Fabric's cache size.
func NewManager(msps ...*MSP) *Manager {
	m := &Manager{msps: map[string]*MSP{}, cache: map[string]*Identity{}, cacheSize: DefaultCacheSize}
	for _, x := range msps {
		m.msps[x.ID] = x
	}
	return m
}

// SetCacheSize changes the identity cache size (0 disables caching).
func (m *Manager) SetCacheSize(n int) { m.mu.Lock(); m.cacheSize = n; m.mu.Unlock() }

// MSP returns the MSP with the given ID, or nil.
func (m *Manager) MSP(id string) *MSP { return m.msps[id] }

// IDs lists the MSP IDs, sorted.
func (m *Manager) IDs() []string {
	ids := make([]string, 0, len(m.msps))
	for id := range m.msps {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

// ErrUnknownMSP is returned for an identity of an MSP the channel does not know.
var ErrUnknownMSP = errors.New("unknown MSP")

// DeserializeIdentity parses a SerializedIdentity, validates its certificate
// against its MSP, and caches the result.
func (m *Manager) DeserializeIdentity(serialized []byte) (*Identity, error) {
	key := string(serialized)
	m.mu.RLock()
	id, ok := m.cache[key]
	m.mu.RUnlock()
	if ok {
		return id, nil
	}
	sid := &mspproto.SerializedIdentity{}
	if err := proto.Unmarshal(serialized, sid); err != nil {
		return nil, fmt.Errorf("could not deserialize identity: %w", err)
	}
	owner := m.msps[sid.Mspid]
	if owner == nil {
		return nil, fmt.Errorf("%w %q", ErrUnknownMSP, sid.Mspid)
	}
	cert, err := crypto.ParseCertificatePEM(sid.IdBytes)
	if err != nil {
		return nil, fmt.Errorf("could not parse certificate: %w", err)
	}
	if err := owner.Validate(cert); err != nil {
		return nil, err
	}
	pub, ok := cert.PublicKey.(*ecdsa.PublicKey)
	if !ok {
		return nil, errors.New("certificate key is not ECDSA")
	}
	id = &Identity{MSPID: sid.Mspid, Cert: cert, Serialized: serialized, pub: pub}
	m.mu.Lock()
	if m.cacheSize > 0 {
		if len(m.order) >= m.cacheSize {
			delete(m.cache, m.order[0])
			m.order = m.order[1:]
		}
		if _, dup := m.cache[key]; !dup {
			m.cache[key] = id
			m.order = append(m.order, key)
		}
	}
	m.mu.Unlock()
	return id, nil
}
