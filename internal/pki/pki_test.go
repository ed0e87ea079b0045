package pki

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"net"
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

// TestServerAndClientCertificatesVerify: a server certificate verifies for
// the loopback names against the CA's pool and not another CA's; a client
// certificate verifies for client auth; neither outlives validFor.
func TestServerAndClientCertificatesVerify(t *testing.T) {
	g := NewWithT(t)
	ca, err := NewCA("test CA", time.Hour)
	g.Expect(err).NotTo(HaveOccurred())
	other, err := NewCA("other CA", time.Hour)
	g.Expect(err).NotTo(HaveOccurred())

	server, err := ca.ServerCertificate()
	g.Expect(err).NotTo(HaveOccurred())
	leaf, err := x509.ParseCertificate(server.Certificate[0])
	g.Expect(err).NotTo(HaveOccurred())
	for _, name := range []string{"127.0.0.1", "::1", "localhost"} {
		_, err := leaf.Verify(x509.VerifyOptions{Roots: ca.Pool, DNSName: name})
		g.Expect(err).NotTo(HaveOccurred(), name)
	}
	_, err = leaf.Verify(x509.VerifyOptions{Roots: other.Pool, DNSName: "localhost"})
	g.Expect(err).To(HaveOccurred())
	g.Expect(leaf.NotAfter).To(BeTemporally("<=", time.Now().Add(time.Hour)))

	certPEM, keyPEM, err := ca.IssueClient("a client")
	g.Expect(err).NotTo(HaveOccurred())
	_, err = tls.X509KeyPair(certPEM, keyPEM)
	g.Expect(err).NotTo(HaveOccurred())
	block, _ := pem.Decode(certPEM)
	client, err := x509.ParseCertificate(block.Bytes)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(client.Subject.CommonName).To(Equal("a client"))
	_, err = client.Verify(x509.VerifyOptions{Roots: ca.Pool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
	g.Expect(err).NotTo(HaveOccurred())
	_, err = client.Verify(x509.VerifyOptions{Roots: ca.Pool})
	g.Expect(err).To(HaveOccurred(), "not for servers")
	g.Expect(leaf.IPAddresses).To(ContainElement(net.IPv6loopback.To16()))
}
