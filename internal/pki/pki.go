// Package pki makes throwaway certificate authorities, and the server and
// client certificates they issue, for TLS servers on loopback: the git
// server that `windlass dev` ships and the servers of the tests. Keys are
// ECDSA P-256, written PEM-encoded in PKCS #8.
package pki

import (
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

// CA is a certificate authority.
type CA struct {
	// Cert is the CA's certificate, PEM its PEM encoding.
	Cert *x509.Certificate
	PEM  []byte
	// Pool holds Cert alone.
	Pool *x509.CertPool

	key      *ecdsa.PrivateKey
	validFor time.Duration
}

// NewCA makes a CA called name whose certificates, its own included, are
// valid from an hour ago for validFor.
func NewCA(name string, validFor time.Duration) (*CA, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generating the key of CA %s: %w", name, err)
	}
	tmpl := &x509.Certificate{
		Subject:               pkix.Name{CommonName: name, Organization: []string{"Windlass"}},
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	setValidity(tmpl, validFor)
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, fmt.Errorf("creating the certificate of CA %s: %w", name, err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	ca := &CA{Cert: cert, PEM: encode("CERTIFICATE", der), Pool: x509.NewCertPool(), key: key, validFor: validFor}
	ca.Pool.AddCert(cert)
	return ca, nil
}

// Issue signs a certificate from tmpl (its subject, names and extended key
// usage) and returns it and its new key, PEM-encoded.
func (ca *CA) Issue(tmpl *x509.Certificate) (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("generating a key: %w", err)
	}
	setValidity(tmpl, ca.validFor)
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, key.Public(), ca.key)
	if err != nil {
		return nil, nil, fmt.Errorf("signing the certificate of %s: %w", tmpl.Subject.CommonName, err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, nil, err
	}
	return encode("CERTIFICATE", der), encode("PRIVATE KEY", keyDER), nil
}

// IssueServer issues a server certificate for 127.0.0.1, ::1 and
// localhost.
func (ca *CA) IssueServer() (certPEM, keyPEM []byte, err error) {
	return ca.Issue(&x509.Certificate{
		Subject:     pkix.Name{CommonName: "127.0.0.1"},
		DNSNames:    []string{"localhost"},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	})
}

// IssueClient issues a client certificate for name.
func (ca *CA) IssueClient(name string) (certPEM, keyPEM []byte, err error) {
	return ca.Issue(&x509.Certificate{
		Subject:     pkix.Name{CommonName: name},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	})
}

// ServerCertificate issues a server certificate (IssueServer) and loads it
// for a tls.Config.
func (ca *CA) ServerCertificate() (tls.Certificate, error) {
	certPEM, keyPEM, err := ca.IssueServer()
	if err != nil {
		return tls.Certificate{}, err
	}
	return tls.X509KeyPair(certPEM, keyPEM)
}

func setValidity(tmpl *x509.Certificate, validFor time.Duration) {
	now := time.Now()
	tmpl.SerialNumber = serial()
	tmpl.NotBefore, tmpl.NotAfter = now.Add(-time.Hour), now.Add(validFor)
}

func encode(blockType string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: blockType, Bytes: der})
}

// serial returns a random positive certificate serial number.
func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 126))
	if err != nil {
		// crypto/rand does not fail on supported platforms.
		panic(err)
	}
	return n.Add(n, big.NewInt(1))
}
