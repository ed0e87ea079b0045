package testservers

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/windlass-dev/windlass/internal/pki"
)

// serverPKI is a private CA and a server certificate it issued, written to
// files for a server to load.
type serverPKI struct {
	caPEM    []byte
	certFile string
	keyFile  string
}

// newServerPKI generates an ECDSA P-256 CA and a server certificate for
// 127.0.0.1, ::1 and localhost, and writes the certificate and its key
// into dir.
func newServerPKI(t testing.TB, dir string) *serverPKI {
	t.Helper()
	p, err := writeServerPKI(dir)
	if err != nil {
		t.Fatalf("generating the test CA: %v", err)
	}
	return p
}

func writeServerPKI(dir string) (*serverPKI, error) {
	ca, err := pki.NewCA("testservers CA", 24*time.Hour)
	if err != nil {
		return nil, err
	}
	certPEM, keyPEM, err := ca.IssueServer()
	if err != nil {
		return nil, err
	}
	p := &serverPKI{caPEM: ca.PEM, certFile: filepath.Join(dir, "server.crt"), keyFile: filepath.Join(dir, "server.key")}
	if err := os.WriteFile(p.certFile, certPEM, 0o600); err != nil {
		return nil, err
	}
	if err := os.WriteFile(p.keyFile, keyPEM, 0o600); err != nil {
		return nil, err
	}
	return p, nil
}

// tlsConfig returns a client configuration that trusts only the CA.
func (p *serverPKI) tlsConfig() (*tls.Config, error) {
	return ClientTLSConfig(p.caPEM)
}

// ClientTLSConfig returns a TLS client configuration that trusts only the
// CA in caPEM.
func ClientTLSConfig(caPEM []byte) (*tls.Config, error) {
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return nil, fmt.Errorf("no certificate in the CA PEM")
	}
	return &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}, nil
}
