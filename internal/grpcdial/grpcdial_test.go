package grpcdial

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

// selfSigned makes a CA-less server certificate for 127.0.0.1 and writes it as PEM.
func selfSigned(t *testing.T, dir, name string) (tls.Certificate, string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true,
		BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, name+".pem")
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, path
}

// TestTLSTrustsOnlyTheGivenRoots: a call succeeds with the server's own
// certificate as root and fails with another's (the negative control).
func TestTLSTrustsOnlyTheGivenRoots(t *testing.T) {
	dir := t.TempDir()
	cert, own := selfSigned(t, dir, "server")
	_, other := selfSigned(t, dir, "other")
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer(grpc.Creds(credentials.NewServerTLSFromCert(&cert)))
	healthpb.RegisterHealthServer(srv, health.NewServer())
	go srv.Serve(lis)
	defer srv.Stop()

	call := func(roots []string) error {
		conn, err := Dial(lis.Addr().String(), roots)
		if err != nil {
			return err
		}
		defer conn.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_, err = healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{})
		return err
	}
	if err := call([]string{own}); err != nil {
		t.Fatalf("with the server's certificate as root: %v", err)
	}
	if err := call([]string{other}); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("with another root the call must fail on the certificate, got %v", err)
	}
	if err := call(nil); err == nil {
		t.Fatal("plain text to a TLS server must fail")
	}
}

func TestCredentialsRefuseAFileWithoutACertificate(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "empty.pem")
	os.WriteFile(bad, []byte("not a certificate\n"), 0o644)
	if _, err := Credentials([]string{bad}); err == nil || !strings.Contains(err.Error(), "no PEM certificate") {
		t.Fatalf("want a refusal naming the file, got %v", err)
	}
	if _, err := Credentials([]string{bad + ".missing"}); err == nil {
		t.Fatal("a missing file must be refused")
	}
}
