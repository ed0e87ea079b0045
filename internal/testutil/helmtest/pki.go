package helmtest

import (
	"crypto/tls"
	"crypto/x509"
	"testing"
	"time"

	"github.com/windlass-dev/windlass/internal/pki"
)

// newServerTLS makes a CA and a certificate it signed for 127.0.0.1, ::1
// and localhost, valid for a day; it returns the server's TLS certificate
// and the CA's PEM. Every Repo has its own CA, unlike httptest's shared
// certificate, so that a test can give a client the wrong CA.
func newServerTLS(t testing.TB) (tls.Certificate, []byte) {
	t.Helper()
	ca := newCA(t, "helmtest server CA")
	cert, err := ca.ServerCertificate()
	if err != nil {
		t.Fatalf("helmtest: server certificate: %v", err)
	}
	return cert, ca.PEM
}

// clientPKI is a client CA and one client certificate it signed.
type clientPKI struct {
	pool            *x509.CertPool
	cert            tls.Certificate
	certPEM, keyPEM []byte
}

// newClientPKI makes a client CA and a client certificate valid for a day.
func newClientPKI(t testing.TB) *clientPKI {
	t.Helper()
	ca := newCA(t, "helmtest client CA")
	p := &clientPKI{pool: ca.Pool}
	var err error
	if p.certPEM, p.keyPEM, err = ca.IssueClient("helmtest-client"); err != nil {
		t.Fatalf("helmtest: client certificate: %v", err)
	}
	if p.cert, err = tls.X509KeyPair(p.certPEM, p.keyPEM); err != nil {
		t.Fatalf("helmtest: client certificate: %v", err)
	}
	return p
}

// newCA makes a CA whose certificates are valid for a day.
func newCA(t testing.TB, name string) *pki.CA {
	t.Helper()
	ca, err := pki.NewCA(name, 24*time.Hour)
	if err != nil {
		t.Fatalf("helmtest: %v", err)
	}
	return ca
}
