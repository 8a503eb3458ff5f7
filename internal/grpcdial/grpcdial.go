// Package grpcdial opens the gRPC client connections of our load generator and
// block watcher: plain TCP to Fabric 1.x as the papers ran it, or server-side
// TLS to Fabric v2.5/v3.1, which users run with TLS on every listener.
package grpcdial

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
)

// MaxMessage is the largest message sent or received (blocks of many
// padded transactions exceed gRPC's default 4 MiB).
const MaxMessage = 100 << 20

// Dial connects to addr, over TLS when rootCertFiles (PEM CA certificates the
// server's certificate must chain to) are given, else in plain text.
func Dial(addr string, rootCertFiles []string) (*grpc.ClientConn, error) {
	creds, err := Credentials(rootCertFiles)
	if err != nil {
		return nil, err
	}
	return grpc.NewClient(addr, grpc.WithTransportCredentials(creds),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(MaxMessage), grpc.MaxCallSendMsgSize(MaxMessage)))
}

// Credentials are plain text for no files, else TLS 1.2+ trusting exactly the
// certificates in the files. A file without a PEM certificate is an error:
// a typo must not fall back to another trust store.
func Credentials(rootCertFiles []string) (credentials.TransportCredentials, error) {
	if len(rootCertFiles) == 0 {
		return insecure.NewCredentials(), nil
	}
	pool := x509.NewCertPool()
	for _, f := range rootCertFiles {
		pem, err := os.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("TLS root certificate: %w", err)
		}
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("TLS root certificate %s: no PEM certificate in it", f)
		}
	}
	return credentials.NewTLS(&tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}), nil
}
