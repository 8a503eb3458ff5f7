package crypto

import (
	"crypto/ecdsa"
	"encoding/asn1"
	"testing"
)

func TestSignVerifyRoundTripAndLowS(t *testing.T) {
	key, err := GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	msg := []byte("payload")
	for i := 0; i < 50; i++ {
		sig, err := Sign(key, msg)
		if err != nil {
			t.Fatal(err)
		}
		if err := Verify(&key.PublicKey, msg, sig); err != nil {
			t.Fatalf("valid signature rejected: %v", err)
		}
		var es ecdsaSignature
		if _, err := asn1.Unmarshal(sig, &es); err != nil || es.S.Cmp(halfOrder) > 0 {
			t.Fatalf("signature not low-S")
		}
	}
	sig, _ := Sign(key, msg)
	if Verify(&key.PublicKey, []byte("other"), sig) == nil {
		t.Fatal("signature over another message accepted")
	}
	if Verify(&key.PublicKey, msg, []byte{0x30, 0x01}) == nil {
		t.Fatal("malformed DER accepted")
	}
}

func TestHighSRejected(t *testing.T) {
	key, _ := GenerateKey()
	msg := []byte("m")
	sig, _ := Sign(key, msg)
	var es ecdsaSignature
	asn1.Unmarshal(sig, &es)
	es.S.Sub(key.Params().N, es.S) // the malleated twin is mathematically valid
	high, _ := asn1.Marshal(es)
	if ecdsaVerifyRaw(&key.PublicKey, msg, es) != true {
		t.Fatal("test setup: high-S twin should verify mathematically")
	}
	if err := Verify(&key.PublicKey, msg, high); err != ErrHighS {
		t.Fatalf("want ErrHighS, got %v", err)
	}
}

func ecdsaVerifyRaw(pub *ecdsa.PublicKey, msg []byte, es ecdsaSignature) bool {
	return ecdsa.Verify(pub, Hash(msg), es.R, es.S)
}
