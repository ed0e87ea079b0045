package gitserver

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"testing"

	"github.com/go-git/go-git/v5"
	. "github.com/onsi/gomega"
)

func writeTemp(t *testing.T, name string, data []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	NewWithT(t).Expect(os.WriteFile(p, data, 0o600)).To(Succeed())
	return p
}

func TestHTTPSWithCA(t *testing.T) {
	g := NewWithT(t)
	s := NewForTest(t)
	_, sha := seed(t, s, "podinfo.git")
	base := s.MustStartHTTPS(t, TLSOptions{})
	g.Expect(base).To(MatchRegexp(`^https://127\.0\.0\.1:\d+$`))
	url := base + "/podinfo.git"

	block, _ := pem.Decode(s.CACert())
	g.Expect(block).NotTo(BeNil())
	ca, err := x509.ParseCertificate(block.Bytes)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(ca.IsCA).To(BeTrue())

	// Without the CA the certificate is not trusted.
	_, _, err = goGitClone(t, &git.CloneOptions{URL: url})
	g.Expect(err).To(HaveOccurred())
	_, err = sysClone(t, s, url, nil)
	g.Expect(err).To(HaveOccurred())

	repo, _, err := goGitClone(t, &git.CloneOptions{URL: url, CABundle: s.CACert()})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(goGitHead(t, repo, "main")).To(Equal(sha))

	caFile := writeTemp(t, "ca.pem", s.CACert())
	dir, err := sysClone(t, s, url, nil, "-c", "http.sslCAInfo="+caFile)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(sysRevParse(t, s, dir, "HEAD")).To(Equal(sha))

	// localhost is in the certificate too.
	conn, err := tls.Dial("tcp", base[len("https://"):], &tls.Config{RootCAs: s.pki.ca.Pool, ServerName: "localhost"})
	g.Expect(err).NotTo(HaveOccurred())
	conn.Close()

	// HTTP and HTTPS run side by side on different ports.
	httpURL := s.MustStartHTTP(t)
	g.Expect(httpURL).NotTo(Equal(base))
	_, err = s.StartHTTPS(TLSOptions{RequireClientCert: true})
	g.Expect(err).To(HaveOccurred(), "HTTPS is already running with other options")
}

func TestHTTPSRequireClientCert(t *testing.T) {
	g := NewWithT(t)
	s := NewForTest(t)
	_, sha := seed(t, s, "podinfo.git")
	base := s.MustStartHTTPS(t, TLSOptions{RequireClientCert: true})
	url := base + "/podinfo.git"
	certPEM, keyPEM := s.ClientCert()
	g.Expect(string(certPEM)).To(HavePrefix("-----BEGIN CERTIFICATE-----"))
	g.Expect(string(keyPEM)).To(HavePrefix("-----BEGIN PRIVATE KEY-----"))

	// go-git: refused without a client certificate, served with one.
	_, _, err := goGitClone(t, &git.CloneOptions{URL: url, CABundle: s.CACert()})
	g.Expect(err).To(HaveOccurred())
	repo, _, err := goGitClone(t, &git.CloneOptions{URL: url, CABundle: s.CACert(), ClientCert: certPEM, ClientKey: keyPEM})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(goGitHead(t, repo, "main")).To(Equal(sha))

	// A certificate from another CA is refused.
	other := NewForTest(t)
	otherCert, otherKey := other.ClientCert()
	_, _, err = goGitClone(t, &git.CloneOptions{URL: url, CABundle: s.CACert(), ClientCert: otherCert, ClientKey: otherKey})
	g.Expect(err).To(HaveOccurred())

	// System git, likewise.
	caFile := writeTemp(t, "ca.pem", s.CACert())
	_, err = sysClone(t, s, url, nil, "-c", "http.sslCAInfo="+caFile)
	g.Expect(err).To(HaveOccurred())
	dir, err := sysClone(t, s, url, nil,
		"-c", "http.sslCAInfo="+caFile,
		"-c", "http.sslCert="+writeTemp(t, "tls.crt", certPEM),
		"-c", "http.sslKey="+writeTemp(t, "tls.key", keyPEM))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(sysRevParse(t, s, dir, "HEAD")).To(Equal(sha))
}
