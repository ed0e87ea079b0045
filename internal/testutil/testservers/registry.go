package testservers

import (
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"golang.org/x/crypto/bcrypt"
)

// RegistryOptions configures StartRegistry.
type RegistryOptions struct {
	// Username and Password, when both are set, turn on basic auth
	// (htpasswd): every request needs them.
	Username string
	Password string
	// TLS serves HTTPS with a certificate from a private CA generated for
	// the test (Registry.CAPEM) instead of plain HTTP.
	TLS bool
}

// Registry is a running distribution registry (the reference OCI
// registry). It answers 404 to the OCI 1.1 referrers API, so clients fall
// back to the tag schema there.
type Registry struct {
	// Host is the registry's host:port on 127.0.0.1, the registry part of
	// image references.
	Host string
	// CAPEM is the PEM certificate of the CA that issued the server
	// certificate, when the registry serves TLS; else nil.
	CAPEM []byte
	// Username and Password are the credentials basic auth wants, if on.
	Username string
	Password string
	// StorageDir is the folder the registry stores blobs and manifests in.
	StorageDir string
}

// URL returns the registry's base URL: https://host when it serves TLS,
// else http://host.
func (r *Registry) URL() string {
	if r.CAPEM != nil {
		return "https://" + r.Host
	}
	return "http://" + r.Host
}

// registryConfig is the subset of distribution's configuration file that
// StartRegistry writes; JSON is YAML, so it is written as JSON.
type registryConfig struct {
	Version string         `json:"version"`
	Log     map[string]any `json:"log"`
	Storage map[string]any `json:"storage"`
	HTTP    map[string]any `json:"http"`
	Auth    map[string]any `json:"auth,omitempty"`
}

// StartRegistry runs the distribution registry on a free loopback port
// with filesystem storage in a temporary folder, waits until it answers GET
// /v2/, and stops it when t ends. It fails t when the test servers are not
// built.
func StartRegistry(t testing.TB, opts RegistryOptions) *Registry {
	t.Helper()
	bin := binary(t, registryBinary)
	dir := t.TempDir()
	r := &Registry{Host: freeAddr(t), StorageDir: filepath.Join(dir, "storage")}
	cfg := registryConfig{
		Version: "0.1",
		Log:     map[string]any{"level": "info", "accesslog": map[string]any{"disabled": false}},
		Storage: map[string]any{
			"filesystem": map[string]any{"rootdirectory": r.StorageDir},
			"delete":     map[string]any{"enabled": true},
		},
		HTTP: map[string]any{"addr": r.Host, "secret": randomHex(t)},
	}
	if opts.Username != "" || opts.Password != "" {
		htpasswd := filepath.Join(dir, "htpasswd")
		writeHtpasswd(t, htpasswd, opts.Username, opts.Password)
		cfg.Auth = map[string]any{"htpasswd": map[string]any{"realm": "windlass-test", "path": htpasswd}}
		r.Username, r.Password = opts.Username, opts.Password
	}
	var p *serverPKI
	if opts.TLS {
		p = newServerPKI(t, dir)
		cfg.HTTP["tls"] = map[string]any{"certificate": p.certFile, "key": p.keyFile}
		r.CAPEM = p.caPEM
	}
	configFile := filepath.Join(dir, "config.yml")
	data, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(configFile, data, 0o600); err != nil {
		t.Fatal(err)
	}

	cmd := exec.Command(bin, "serve", configFile)
	cmd.Dir = dir
	// No OpenTelemetry exporter: nothing listens for traces here.
	cmd.Env = serverEnv(dir, "OTEL_TRACES_EXPORTER=none", "OTEL_SDK_DISABLED=true")
	proc := start(t, "registry", cmd)
	tlsConfig, err := clientTLS(p)
	if err != nil {
		t.Fatal(err)
	}
	waitHTTP(t, "registry", proc, r.URL()+"/v2/", tlsConfig)
	return r
}

// writeHtpasswd writes an htpasswd file with user's bcrypt hash, the only
// hash distribution accepts.
func writeHtpasswd(t testing.TB, path, user, password string) {
	t.Helper()
	hash, err := bcrypt.GenerateFromPassword([]byte(password), bcrypt.MinCost)
	if err != nil {
		t.Fatalf("hashing the registry password: %v", err)
	}
	if err := os.WriteFile(path, fmt.Appendf(nil, "%s:%s\n", user, hash), 0o600); err != nil {
		t.Fatal(err)
	}
}

// clientTLS returns the client TLS configuration for p, or nil for plain
// HTTP.
func clientTLS(p *serverPKI) (*tls.Config, error) {
	if p == nil {
		return nil, nil
	}
	return p.tlsConfig()
}

// randomHex returns 16 random bytes in hex.
func randomHex(t testing.TB) string {
	t.Helper()
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}
