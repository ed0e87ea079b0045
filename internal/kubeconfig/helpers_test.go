package kubeconfig

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// Canaries: distinctive secret values that must never show in an error or,
// for the file canary, in a returned config.
const (
	tokenCanary    = "tok-C4N4RY-7f3a9e"
	passwordCanary = "pw-C4N4RY-5b2d1c"
	fileCanary     = "file-C4N4RY-0e8c44"
	proxyCanary    = "proxy-C4N4RY-91aa"
)

// pemPair is a self-signed certificate and its key, PEM encoded.
type pemPair struct{ cert, key []byte }

// newPEMPair makes a self-signed ECDSA certificate for tests.
func newPEMPair(t testing.TB) pemPair {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pemPair{
		cert: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		key:  pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}),
	}
}

// canaryFile writes fileCanary to a temporary file and returns its path.
func canaryFile(t testing.TB) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "sa-token")
	if err := os.WriteFile(path, []byte(fileCanary), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// validConfig returns a usable kubeconfig: context "ctx" uses cluster
// "remote" (https server, inline CA) and user "admin" (inline token).
func validConfig(ca []byte) *clientcmdapi.Config {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["remote"] = &clientcmdapi.Cluster{Server: "https://remote.example.com:6443", CertificateAuthorityData: ca}
	cfg.AuthInfos["admin"] = &clientcmdapi.AuthInfo{Token: tokenCanary}
	cfg.Contexts["ctx"] = &clientcmdapi.Context{Cluster: "remote", AuthInfo: "admin"}
	cfg.CurrentContext = "ctx"
	return cfg
}

// encode serializes cfg as YAML.
func encode(t testing.TB, cfg *clientcmdapi.Config) []byte {
	t.Helper()
	data, err := clientcmd.Write(*cfg)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// execConfig is a minimal valid exec plugin configuration.
func execConfig() *clientcmdapi.ExecConfig {
	return &clientcmdapi.ExecConfig{
		APIVersion: "client.authentication.k8s.io/v1", Command: "/bin/true",
		InteractiveMode: clientcmdapi.NeverExecInteractiveMode,
	}
}

// unsafeResult says how cfg breaks policy p: it names a file, has a
// plugin p refuses, or is insecure when p refuses that; "" when it is safe.
func unsafeResult(cfg *rest.Config, p Policy) string {
	switch {
	case cfg.BearerTokenFile != "" || cfg.CertFile != "" || cfg.KeyFile != "" || cfg.CAFile != "":
		return "names a file"
	case !p.AllowExec && (cfg.ExecProvider != nil || cfg.AuthProvider != nil):
		return "has a plugin"
	case cfg.AuthConfigPersister != nil:
		return "persists credentials"
	case !p.AllowInsecureTLS && (cfg.Insecure || !isHTTPS(cfg.Host)):
		return "is insecure"
	}
	return ""
}

// isHTTPS reports whether host is an https URL.
func isHTTPS(host string) bool {
	u, err := url.Parse(host)
	return err == nil && u.Scheme == "https"
}
