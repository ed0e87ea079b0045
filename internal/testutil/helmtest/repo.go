package helmtest

import (
	"crypto/subtle"
	"crypto/tls"
	"crypto/x509"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	chart "helm.sh/helm/v4/pkg/chart/v2"
	repov1 "helm.sh/helm/v4/pkg/repo/v1"
)

// IndexPath is the path of the index relative to a repository's URL.
const IndexPath = "index.yaml"

// RepoOption configures NewRepo.
type RepoOption func(*repoConfig)

type repoConfig struct {
	tls        bool
	clientCert bool
	user, pass string
	relative   bool
	prefix     string
}

// WithTLS serves the repository over HTTPS with a certificate for
// 127.0.0.1, ::1 and localhost signed by a CA of its own, which CAPEM
// returns.
func WithTLS() RepoOption {
	return func(c *repoConfig) { c.tls = true }
}

// WithClientCertAuth serves over HTTPS (as WithTLS) and requires a client
// certificate signed by the repository's client CA; ClientCertPEM and
// ClientKeyPEM return one.
func WithClientCertAuth() RepoOption {
	return func(c *repoConfig) { c.tls, c.clientCert = true, true }
}

// WithBasicAuth requires HTTP basic auth with user and pass on every path,
// custom handlers included.
func WithBasicAuth(user, pass string) RepoOption {
	return func(c *repoConfig) { c.user, c.pass = user, pass }
}

// WithRelativeURLs writes chart URLs in index.yaml relative to the index
// ("podinfo-6.5.0.tgz") rather than absolute.
func WithRelativeURLs() RepoOption {
	return func(c *repoConfig) { c.relative = true }
}

// WithPathPrefix serves the repository under a path, such as "/charts",
// so that URL returns "http://127.0.0.1:port/charts".
func WithPathPrefix(prefix string) RepoOption {
	return func(c *repoConfig) { c.prefix = "/" + strings.Trim(prefix, "/") }
}

// Repo is an HTTP(S) Helm chart repository on loopback. It is safe for
// concurrent use.
type Repo struct {
	cfg    repoConfig
	srv    *httptest.Server
	dir    string
	caPEM  []byte
	client *clientPKI

	mu       sync.Mutex
	counts   map[string]int
	headers  map[string]http.Header
	handlers map[string]http.Handler
}

// NewRepo starts an empty repository (index.yaml lists no chart) that
// stops when t ends.
func NewRepo(t testing.TB, opts ...RepoOption) *Repo {
	t.Helper()
	r := &Repo{
		dir:      t.TempDir(),
		counts:   map[string]int{},
		headers:  map[string]http.Header{},
		handlers: map[string]http.Handler{},
	}
	for _, opt := range opts {
		opt(&r.cfg)
	}
	r.srv = httptest.NewUnstartedServer(http.HandlerFunc(r.serve))
	r.srv.Config.ErrorLog = log.New(io.Discard, "", 0) // refused TLS handshakes are expected
	if r.cfg.tls {
		r.startTLS(t)
	} else {
		r.srv.Start()
	}
	t.Cleanup(r.srv.Close)
	r.reindex(t)
	return r
}

// startTLS starts the server over HTTPS, asking for client certificates
// when configured.
func (r *Repo) startTLS(t testing.TB) {
	t.Helper()
	var cert tls.Certificate
	cert, r.caPEM = newServerTLS(t)
	r.srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	if r.cfg.clientCert {
		r.client = newClientPKI(t)
		r.srv.TLS.ClientAuth = tls.RequireAndVerifyClientCert
		r.srv.TLS.ClientCAs = r.client.pool
	}
	r.srv.StartTLS()
}

// URL returns the repository's URL, without a trailing slash:
// http(s)://127.0.0.1:port[/prefix].
func (r *Repo) URL() string { return r.srv.URL + r.cfg.prefix }

// CAPEM returns the PEM of the CA that signed the server's certificate,
// nil without TLS.
func (r *Repo) CAPEM() []byte { return r.caPEM }

// ClientTLSConfig returns a client TLS configuration that trusts the
// server and, with WithClientCertAuth, presents a valid client
// certificate; nil without TLS.
func (r *Repo) ClientTLSConfig() *tls.Config {
	if !r.cfg.tls {
		return nil
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(r.caPEM)
	c := &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	if r.client != nil {
		c.Certificates = []tls.Certificate{r.client.cert}
	}
	return c
}

// ClientCertPEM returns a client certificate that the server accepts
// (WithClientCertAuth), nil otherwise.
func (r *Repo) ClientCertPEM() []byte {
	if r.client == nil {
		return nil
	}
	return r.client.certPEM
}

// ClientKeyPEM returns the private key of ClientCertPEM, nil without
// WithClientCertAuth.
func (r *Repo) ClientKeyPEM() []byte {
	if r.client == nil {
		return nil
	}
	return r.client.keyPEM
}

// Add packages the charts into the repository and regenerates index.yaml.
// It returns the URL of the last chart's .tgz.
func (r *Repo) Add(t testing.TB, charts ...*chart.Chart) string {
	t.Helper()
	var path string
	for _, ch := range charts {
		path = Package(t, ch, r.dir)
	}
	r.reindex(t)
	return r.URL() + "/" + filepath.Base(path)
}

// Remove deletes the chart name-version from the repository and
// regenerates index.yaml.
func (r *Repo) Remove(t testing.TB, name, version string) {
	t.Helper()
	if err := os.Remove(filepath.Join(r.dir, name+"-"+version+".tgz")); err != nil {
		t.Fatalf("helmtest: remove chart %s-%s: %v", name, version, err)
	}
	r.reindex(t)
}

// Index returns the repository's current index.yaml.
func (r *Repo) Index(t testing.TB) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(r.dir, IndexPath))
	if err != nil {
		t.Fatalf("helmtest: read index: %v", err)
	}
	return data
}

// reindex writes index.yaml for the charts in the repository's folder.
func (r *Repo) reindex(t testing.TB) {
	t.Helper()
	base := r.URL()
	if r.cfg.relative {
		base = ""
	}
	idx, err := repov1.IndexDirectory(r.dir, base)
	if err != nil {
		t.Fatalf("helmtest: index charts: %v", err)
	}
	idx.SortEntries()
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := idx.WriteFile(filepath.Join(r.dir, IndexPath), 0o644); err != nil {
		t.Fatalf("helmtest: write index: %v", err)
	}
}

// Handle serves h at path (an absolute path such as "/index.yaml" or
// "/charts/index.yaml", prefix included) instead of the repository's
// files. Basic auth, when configured, still applies first.
func (r *Repo) Handle(path string, h http.Handler) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.handlers[path] = h
}

// Requests returns how many requests the server got for path (an absolute
// URL path such as "/index.yaml"), whatever their answer.
func (r *Repo) Requests(path string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.counts[path]
}

// LastHeader returns a copy of the headers of the last request for path,
// nil when there was none; tests use it to see whether credentials were
// sent.
func (r *Repo) LastHeader(path string) http.Header {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.headers[path].Clone()
}

// serve counts the request, checks basic auth, then serves a custom
// handler or a file of the repository.
func (r *Repo) serve(w http.ResponseWriter, req *http.Request) {
	r.mu.Lock()
	r.counts[req.URL.Path]++
	r.headers[req.URL.Path] = req.Header.Clone()
	h := r.handlers[req.URL.Path]
	r.mu.Unlock()
	if !r.authorized(req) {
		w.Header().Set("WWW-Authenticate", `Basic realm="helmtest"`)
		http.Error(w, "unauthorized", http.StatusUnauthorized)
		return
	}
	if h != nil {
		h.ServeHTTP(w, req)
		return
	}
	r.serveFile(w, req)
}

// authorized reports whether req carries the configured credentials.
func (r *Repo) authorized(req *http.Request) bool {
	if r.cfg.user == "" {
		return true
	}
	u, p, ok := req.BasicAuth()
	return ok && subtle.ConstantTimeCompare([]byte(u), []byte(r.cfg.user)) == 1 &&
		subtle.ConstantTimeCompare([]byte(p), []byte(r.cfg.pass)) == 1
}

// serveFile serves a file of the repository's folder under the prefix.
func (r *Repo) serveFile(w http.ResponseWriter, req *http.Request) {
	name, ok := strings.CutPrefix(req.URL.Path, r.cfg.prefix+"/")
	if !ok || name == "" || strings.Contains(name, "/") {
		http.NotFound(w, req)
		return
	}
	r.mu.Lock() // reindex writes index.yaml under the lock
	data, err := os.ReadFile(filepath.Join(r.dir, name))
	r.mu.Unlock()
	if err != nil {
		http.NotFound(w, req)
		return
	}
	if strings.HasSuffix(name, ".tgz") {
		w.Header().Set("Content-Type", "application/gzip")
	} else {
		w.Header().Set("Content-Type", "text/yaml")
	}
	w.Header().Set("Content-Length", strconv.Itoa(len(data)))
	_, _ = w.Write(data)
}
