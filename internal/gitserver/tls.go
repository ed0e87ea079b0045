package gitserver

import (
	"crypto/tls"
	"fmt"
	"time"

	"github.com/windlass-dev/windlass/internal/pki"
)

// certs are a server's certificate authority with the certificates it
// issued.
type certs struct {
	ca         *pki.CA
	serverCert tls.Certificate

	clientCertPEM []byte
	clientKeyPEM  []byte
}

// newCerts generates a CA, a server certificate for 127.0.0.1, ::1 and
// localhost, and a client certificate.
func newCerts() (*certs, error) {
	ca, err := pki.NewCA("gitserver CA", 10*365*24*time.Hour)
	if err != nil {
		return nil, fmt.Errorf("gitserver: %w", err)
	}
	c := &certs{ca: ca}
	if c.serverCert, err = ca.ServerCertificate(); err != nil {
		return nil, fmt.Errorf("gitserver: server certificate: %w", err)
	}
	if c.clientCertPEM, c.clientKeyPEM, err = ca.IssueClient("gitserver client"); err != nil {
		return nil, fmt.Errorf("gitserver: client certificate: %w", err)
	}
	return c, nil
}
