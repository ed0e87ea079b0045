package gitserver

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"time"
)

// pki is a server's certificate authority with the certificates it issued.
type pki struct {
	caCert *x509.Certificate
	caKey  crypto.Signer
	caPEM  []byte
	pool   *x509.CertPool

	serverCert tls.Certificate

	clientCertPEM []byte
	clientKeyPEM  []byte
}

// newPKI generates a CA, a server certificate for 127.0.0.1, ::1 and
// localhost, and a client certificate, all ECDSA P-256.
func newPKI() (*pki, error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("gitserver: generate CA key: %w", err)
	}
	now := time.Now()
	caTmpl := &x509.Certificate{
		SerialNumber:          newSerial(),
		Subject:               pkix.Name{CommonName: "gitserver test CA", Organization: []string{"Windlass tests"}},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(10 * 365 * 24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, caKey.Public(), caKey)
	if err != nil {
		return nil, fmt.Errorf("gitserver: create CA certificate: %w", err)
	}
	caCert, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, fmt.Errorf("gitserver: parse CA certificate: %w", err)
	}
	p := &pki{
		caCert: caCert,
		caKey:  caKey,
		caPEM:  pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}),
		pool:   x509.NewCertPool(),
	}
	p.pool.AddCert(caCert)

	srvCertPEM, srvKeyPEM, err := p.issue(&x509.Certificate{
		Subject:     pkix.Name{CommonName: "127.0.0.1"},
		DNSNames:    []string{"localhost"},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	})
	if err != nil {
		return nil, err
	}
	p.serverCert, err = tls.X509KeyPair(srvCertPEM, srvKeyPEM)
	if err != nil {
		return nil, fmt.Errorf("gitserver: load server certificate: %w", err)
	}

	p.clientCertPEM, p.clientKeyPEM, err = p.issue(&x509.Certificate{
		Subject:     pkix.Name{CommonName: "gitserver test client"},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	})
	if err != nil {
		return nil, err
	}
	return p, nil
}

// issue signs a leaf certificate from tmpl (subject, names, extended key
// usage) with the CA and returns it and its PKCS #8 key, PEM-encoded.
func (p *pki) issue(tmpl *x509.Certificate) (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("gitserver: generate key: %w", err)
	}
	now := time.Now()
	tmpl.SerialNumber = newSerial()
	tmpl.NotBefore = now.Add(-time.Hour)
	tmpl.NotAfter = now.Add(10 * 365 * 24 * time.Hour)
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature
	der, err := x509.CreateCertificate(rand.Reader, tmpl, p.caCert, key.Public(), p.caKey)
	if err != nil {
		return nil, nil, fmt.Errorf("gitserver: sign certificate: %w", err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, nil, fmt.Errorf("gitserver: marshal key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), nil
}

func newSerial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 126))
	if err != nil {
		// crypto/rand does not fail on supported platforms.
		panic(err)
	}
	return n.Add(n, big.NewInt(1))
}
