// Package crypto holds the signature primitives Fabric 1.2 uses: ECDSA over
// P-256 on a SHA-256 digest, DER-encoded, with the low-S normalisation that
// Fabric's software BCCSP enforces on both signing and verifying.
package crypto

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/asn1"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"os"
)

type ecdsaSignature struct{ R, S *big.Int }

var halfOrder = new(big.Int).Rsh(elliptic.P256().Params().N, 1)

// GenerateKey creates a new P-256 private key.
func GenerateKey() (*ecdsa.PrivateKey, error) {
	return ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
}

// Hash is the digest Fabric signs: SHA-256.
func Hash(msg []byte) []byte {
	h := sha256.Sum256(msg)
	return h[:]
}

// Sign signs SHA-256(msg) and returns a DER signature with S in the lower half
// of the curve order, as Fabric requires.
func Sign(key *ecdsa.PrivateKey, msg []byte) ([]byte, error) {
	r, s, err := ecdsa.Sign(rand.Reader, key, Hash(msg))
	if err != nil {
		return nil, err
	}
	if s.Cmp(halfOrder) > 0 {
		s.Sub(key.Params().N, s)
	}
	return asn1.Marshal(ecdsaSignature{r, s})
}

// ErrHighS is returned for signatures whose S is not low; Fabric rejects them
// to rule out signature malleability.
var ErrHighS = errors.New("invalid signature: S is not in the lower half of the curve order")

// Verify checks a DER signature over SHA-256(msg).
func Verify(pub *ecdsa.PublicKey, msg, sig []byte) error {
	var es ecdsaSignature
	rest, err := asn1.Unmarshal(sig, &es)
	if err != nil || len(rest) != 0 || es.R == nil || es.S == nil {
		return errors.New("invalid signature: malformed DER")
	}
	if es.R.Sign() <= 0 || es.S.Sign() <= 0 {
		return errors.New("invalid signature: R or S not positive")
	}
	if es.S.Cmp(halfOrder) > 0 {
		return ErrHighS
	}
	if !ecdsa.Verify(pub, Hash(msg), es.R, es.S) {
		return errors.New("invalid signature: verification failed")
	}
	return nil
}

// ParseCertificatePEM decodes one PEM certificate.
func ParseCertificatePEM(pemBytes []byte) (*x509.Certificate, error) {
	block, _ := pem.Decode(pemBytes)
	if block == nil || block.Type != "CERTIFICATE" {
		return nil, errors.New("no PEM certificate found")
	}
	return x509.ParseCertificate(block.Bytes)
}

// CertificatePEM encodes a DER certificate as PEM.
func CertificatePEM(der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

// PrivateKeyPEM encodes a key as PKCS#8 PEM, as Fabric's cryptogen writes it.
func PrivateKeyPEM(key *ecdsa.PrivateKey) ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
}

// LoadPrivateKey reads a PKCS#8 (or SEC1) PEM ECDSA key from a file.
func LoadPrivateKey(path string) (*ecdsa.PrivateKey, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	block, _ := pem.Decode(raw)
	if block == nil {
		return nil, fmt.Errorf("%s: no PEM block", path)
	}
	if k, err := x509.ParsePKCS8PrivateKey(block.Bytes); err == nil {
		if ek, ok := k.(*ecdsa.PrivateKey); ok {
			return ek, nil
		}
		return nil, fmt.Errorf("%s: not an ECDSA key", path)
	}
	return x509.ParseECPrivateKey(block.Bytes)
}
