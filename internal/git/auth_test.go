package git

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"net/url"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"golang.org/x/crypto/ssh"
)

// selfSignedPEM returns a self-signed certificate and its key, PEM encoded.
func selfSignedPEM(t testing.TB) (certPEM, keyPEM []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER})
}

// sshIdentityPEM returns an OpenSSH private key, encrypted when passphrase
// is set.
func sshIdentityPEM(t testing.TB, passphrase string) []byte {
	t.Helper()
	_, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	var block *pem.Block
	if passphrase == "" {
		block, err = ssh.MarshalPrivateKey(key, "test")
	} else {
		block, err = ssh.MarshalPrivateKeyWithPassphrase(key, "test", []byte(passphrase))
	}
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(block)
}

func TestNewAuthOptions(t *testing.T) {
	cert, key := selfSignedPEM(t)
	otherCert, _ := selfSignedPEM(t)
	identity := sshIdentityPEM(t, "")
	encrypted := sshIdentityPEM(t, "s3cret")
	knownHosts := []byte("github.com " + string(authorizedKey(newSSHKey(t, "ed25519"))))
	tests := []struct {
		name    string
		url     string
		data    map[string][]byte
		want    *AuthOptions
		wantErr string
	}{
		{name: "https without secret", url: "https://example.com/org/repo",
			want: &AuthOptions{Transport: "https", Host: "example.com"}},
		{name: "basic auth", url: "https://example.com:8443/repo",
			data: map[string][]byte{"username": []byte("u"), "password": []byte("p")},
			want: &AuthOptions{Transport: "https", Host: "example.com:8443", Username: "u", Password: "p"}},
		{name: "basic auth over plain http is allowed", url: "http://example.com/repo",
			data: map[string][]byte{"username": []byte("u"), "password": []byte("p")},
			want: &AuthOptions{Transport: "http", Host: "example.com", Username: "u", Password: "p"}},
		{name: "bearer token", url: "https://example.com/repo", data: map[string][]byte{"bearerToken": []byte("t")},
			want: &AuthOptions{Transport: "https", Host: "example.com", BearerToken: "t"}},
		{name: "ca.crt and mTLS", url: "https://example.com/repo",
			data: map[string][]byte{"ca.crt": cert, "tls.crt": cert, "tls.key": key},
			want: &AuthOptions{Transport: "https", Host: "example.com", CAFile: cert, ClientCert: cert, ClientKey: key}},
		{name: "legacy caFile", url: "https://example.com/repo", data: map[string][]byte{"caFile": cert},
			want: &AuthOptions{Transport: "https", Host: "example.com", CAFile: cert}},
		{name: "ca.crt wins over caFile", url: "https://example.com/repo",
			data: map[string][]byte{"caFile": otherCert, "ca.crt": cert},
			want: &AuthOptions{Transport: "https", Host: "example.com", CAFile: cert}},
		{name: "TLS keys are ignored over http", url: "http://example.com/repo",
			data: map[string][]byte{"ca.crt": []byte("junk"), "tls.crt": cert},
			want: &AuthOptions{Transport: "http", Host: "example.com"}},
		{name: "ssh", url: "ssh://git@example.com:2222/repo",
			data: map[string][]byte{"identity": identity, "known_hosts": knownHosts},
			want: &AuthOptions{Transport: "ssh", Host: "example.com:2222", Identity: identity, KnownHosts: knownHosts}},
		{name: "ssh with encrypted identity", url: "ssh://git@example.com/repo",
			data: map[string][]byte{"identity": encrypted, "known_hosts": knownHosts, "password": []byte("s3cret")},
			want: &AuthOptions{Transport: "ssh", Host: "example.com", Identity: encrypted, KnownHosts: knownHosts,
				Password: "s3cret"}},
		{name: "file without secret", url: "file:///tmp/repo", want: &AuthOptions{Transport: "file"}},
		{name: "username without password", url: "https://example.com/repo",
			data: map[string][]byte{"username": []byte("user-value")}, wantErr: "'password' is missing"},
		{name: "password without username", url: "https://example.com/repo",
			data: map[string][]byte{"password": []byte("pass-value")}, wantErr: "'username' is missing"},
		{name: "bearer with basic auth", url: "https://example.com/repo",
			data:    map[string][]byte{"username": []byte("user-value"), "password": []byte("pass-value"), "bearerToken": []byte("token-value")},
			wantErr: "cannot be combined"},
		{name: "tls.crt without tls.key", url: "https://example.com/repo",
			data: map[string][]byte{"tls.crt": cert}, wantErr: "'tls.key' is missing"},
		{name: "tls.key without tls.crt", url: "https://example.com/repo",
			data: map[string][]byte{"tls.key": key}, wantErr: "'tls.crt' is missing"},
		{name: "mismatched key pair", url: "https://example.com/repo",
			data: map[string][]byte{"tls.crt": otherCert, "tls.key": key}, wantErr: "not a valid PEM key pair"},
		{name: "ca.crt is not PEM", url: "https://example.com/repo",
			data: map[string][]byte{"ca.crt": []byte("junk")}, wantErr: "no PEM certificate"},
		{name: "ssh without secret", url: "ssh://git@example.com/repo", wantErr: "'known_hosts' is required"},
		{name: "ssh identity without known_hosts", url: "ssh://git@example.com/repo",
			data: map[string][]byte{"identity": identity}, wantErr: "'known_hosts' is required"},
		{name: "ssh known_hosts without identity", url: "ssh://git@example.com/repo",
			data: map[string][]byte{"known_hosts": knownHosts}, wantErr: "'identity' is required"},
		{name: "ssh identity is junk", url: "ssh://git@example.com/repo",
			data:    map[string][]byte{"identity": []byte("junk"), "known_hosts": knownHosts},
			wantErr: "not a valid SSH private key"},
		{name: "ssh encrypted identity without password", url: "ssh://git@example.com/repo",
			data:    map[string][]byte{"identity": encrypted, "known_hosts": knownHosts},
			wantErr: "'password' is missing"},
		{name: "ssh encrypted identity with wrong password", url: "ssh://git@example.com/repo",
			data:    map[string][]byte{"identity": encrypted, "known_hosts": knownHosts, "password": []byte("nope")},
			wantErr: "cannot be decrypted"},
		{name: "ssh known_hosts without entries", url: "ssh://git@example.com/repo",
			data:    map[string][]byte{"identity": identity, "known_hosts": []byte("# nothing\n")},
			wantErr: "no host keys"},
		{name: "unsupported scheme", url: "git://example.com/repo", wantErr: "unsupported URL scheme"},
		{name: "no host", url: "https:///repo", wantErr: "no host"},
		{name: "file with credentials", url: "file:///tmp/repo",
			data:    map[string][]byte{"username": []byte("user-value"), "password": []byte("pass-value")},
			wantErr: "no credentials"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			u, err := url.Parse(tt.url)
			g.Expect(err).NotTo(HaveOccurred())
			got, err := NewAuthOptions(*u, tt.data)
			if tt.wantErr != "" {
				var invalid *InvalidAuthError
				g.Expect(errors.As(err, &invalid)).To(BeTrue(), "error %v is not an InvalidAuthError", err)
				g.Expect(err).To(MatchError(ContainSubstring(tt.wantErr)))
				for _, v := range tt.data {
					g.Expect(err.Error()).NotTo(ContainSubstring(string(v)))
				}
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got).To(Equal(tt.want))
		})
	}
}

func TestNewProxyOptions(t *testing.T) {
	tests := []struct {
		name    string
		data    map[string][]byte
		want    *ProxyOptions
		wantErr string
	}{
		{name: "address only", data: map[string][]byte{"address": []byte("http://proxy:3128")},
			want: &ProxyOptions{URL: "http://proxy:3128"}},
		{name: "with credentials", data: map[string][]byte{"address": []byte("http://proxy:3128"),
			"username": []byte("u"), "password": []byte("p")},
			want: &ProxyOptions{URL: "http://proxy:3128", Username: "u", Password: "p"}},
		{name: "missing address", data: map[string][]byte{"username": []byte("u")}, wantErr: "no 'address'"},
		{name: "address is not a URL", data: map[string][]byte{"address": []byte("proxy:3128")},
			wantErr: "not a URL"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			got, err := NewProxyOptions(tt.data)
			if tt.wantErr != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tt.wantErr)))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got).To(Equal(tt.want))
		})
	}
}

func TestNewClient(t *testing.T) {
	identity := sshIdentityPEM(t, "")
	tests := []struct {
		name    string
		dir     string
		auth    *AuthOptions
		wantErr string
	}{
		{name: "no auth"},
		{name: "ssh", auth: &AuthOptions{Transport: "ssh", Host: "h", Identity: identity,
			KnownHosts: []byte("h " + string(authorizedKey(newSSHKey(t, "ed25519"))))}},
		{name: "empty work dir", dir: "-", wantErr: "empty work directory"},
		{name: "ssh with a bad identity", auth: &AuthOptions{Transport: "ssh", Identity: []byte("x"),
			KnownHosts: []byte("h " + string(authorizedKey(newSSHKey(t, "ed25519"))))}, wantErr: "identity"},
		{name: "ssh with bad known_hosts", auth: &AuthOptions{Transport: "ssh", Identity: identity,
			KnownHosts: []byte("h not-a-key")}, wantErr: "known_hosts"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			dir := t.TempDir() + "/nested/work"
			if tt.dir == "-" {
				dir = ""
			}
			c, err := NewClient(dir, tt.auth, nil)
			if tt.wantErr != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tt.wantErr)))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(dir).To(BeADirectory())
			c.Close()
		})
	}
}
