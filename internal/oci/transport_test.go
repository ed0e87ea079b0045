package oci

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"
	. "github.com/onsi/gomega"

	"github.com/windlass-dev/windlass/internal/testutil/testservers"
)

// requestLog records the requests a test server received, as
// "METHOD PATH".
type requestLog struct {
	mu       sync.Mutex
	requests []string
}

// add records r.
func (l *requestLog) add(r *http.Request) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.requests = append(l.requests, r.Method+" "+r.URL.Path)
}

// reset forgets the requests so far.
func (l *requestLog) reset() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.requests = nil
}

// matching returns the recorded requests of method ("" for any) whose
// path contains part.
func (l *requestLog) matching(method, part string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, r := range l.requests {
		if (method == "" || strings.HasPrefix(r, method+" ")) && strings.Contains(r, part) {
			out = append(out, r)
		}
	}
	return out
}

// logged wraps h so that every request is recorded in l first.
func logged(l *requestLog, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		l.add(r)
		h.ServeHTTP(w, r)
	})
}

// withBasicAuth wraps h so that it answers 401 to requests without user
// and pass.
func withBasicAuth(user, pass string, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u, p, ok := r.BasicAuth(); !ok || u != user || p != pass {
			w.Header().Set("WWW-Authenticate", `Basic realm="test"`)
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// newInProcessRegistry returns the handler of go-containerregistry's
// in-process registry, with the referrers API.
func newInProcessRegistry() http.Handler {
	return registry.New(registry.Logger(log.New(io.Discard, "", 0)), registry.WithReferrersSupport(true))
}

// serve starts an httptest server of h, stopped when t ends, and returns
// its host:port.
func serve(t *testing.T, h http.Handler) string {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

// startLoggedRegistry starts the in-process registry behind a request log.
func startLoggedRegistry(t *testing.T) (string, *requestLog) {
	t.Helper()
	l := &requestLog{}
	return serve(t, logged(l, newInProcessRegistry())), l
}

// sha256Of returns the digest of b.
func sha256Of(b []byte) v1.Hash {
	sum := sha256.Sum256(b)
	return v1.Hash{Algorithm: "sha256", Hex: hex.EncodeToString(sum[:])}
}

// artifactManifest returns the JSON of an artifact manifest with layers.
func artifactManifest(t *testing.T, layers ...v1.Descriptor) []byte {
	t.Helper()
	config := []byte("{}")
	m := v1.Manifest{SchemaVersion: 2, MediaType: types.OCIManifestSchema1,
		Config: v1.Descriptor{MediaType: ConfigMediaType, Size: int64(len(config)), Digest: sha256Of(config)},
		Layers: layers}
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// hostileRegistry is a registry written for a test: it answers the ping,
// serves manifest for every manifest request (HEAD with its digest) and
// hands blob requests to blob and tag lists to tags.
type hostileRegistry struct {
	manifest []byte
	// noLength leaves the Content-Length of the manifest out.
	noLength bool
	blob     http.HandlerFunc
	tags     http.HandlerFunc
	log      requestLog
}

// start serves r and returns its host:port.
func (h *hostileRegistry) start(t *testing.T) string {
	t.Helper()
	return serve(t, logged(&h.log, h))
}

// ServeHTTP implements http.Handler.
func (h *hostileRegistry) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.URL.Path == "/v2/":
		w.WriteHeader(http.StatusOK)
	case strings.Contains(r.URL.Path, "/manifests/"):
		w.Header().Set("Content-Type", string(types.OCIManifestSchema1))
		w.Header().Set("Docker-Content-Digest", sha256Of(h.manifest).String())
		if !h.noLength {
			w.Header().Set("Content-Length", strconv.Itoa(len(h.manifest)))
		}
		if r.Method == http.MethodGet {
			_, _ = w.Write(h.manifest)
		}
	case strings.Contains(r.URL.Path, "/blobs/") && h.blob != nil:
		h.blob(w, r)
	case strings.HasSuffix(r.URL.Path, "/tags/list") && h.tags != nil:
		h.tags(w, r)
	default:
		http.NotFound(w, r)
	}
}

// distribution starts the distribution registry with basic auth and TLS
// from a private CA, and returns it with options that trust the CA and
// send its credentials.
func distribution(t *testing.T, password string) (*testservers.Registry, Options) {
	t.Helper()
	reg := testservers.StartRegistry(t, testservers.RegistryOptions{Username: "windlass", Password: password, TLS: true})
	return reg, Options{Username: reg.Username, Password: reg.Password, Transport: trusting(t, reg.CAPEM)}
}

// trusting returns a transport that trusts only the CA caPEM.
func trusting(t *testing.T, caPEM []byte) http.RoundTripper {
	t.Helper()
	cfg, err := testservers.ClientTLSConfig(caPEM)
	if err != nil {
		t.Fatal(err)
	}
	tr := remote.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = cfg
	return tr
}

func TestCheckRedirect(t *testing.T) {
	request := func(raw string) *http.Request {
		u, err := url.Parse(raw)
		if err != nil {
			t.Fatal(err)
		}
		return &http.Request{URL: u}
	}
	cases := map[string]struct {
		from, to string
		hops     int
		want     string
	}{
		"same host, another port":   {from: "http://127.0.0.1:5000/v2/a", to: "http://127.0.0.1:6000/b"},
		"public to public":          {from: "https://registry.example/v2/a", to: "https://cdn.example/b?sig=x"},
		"public to loopback":        {from: "https://registry.example/v2/a", to: "https://127.0.0.1/b", want: "internal address 127.0.0.1"},
		"public to metadata":        {from: "https://registry.example/v2/a", to: "https://169.254.169.254/b", want: "internal address"},
		"public to private network": {from: "https://registry.example/v2/a", to: "https://10.1.2.3/b", want: "internal address"},
		"https to http":             {from: "https://registry.example/v2/a", to: "http://cdn.example/b", want: "to plain HTTP"},
		"too many":                  {from: "https://registry.example/v2/a", to: "https://cdn.example/b", hops: maxRedirects, want: "stopped after"},
	}
	for title, c := range cases {
		t.Run(title, func(t *testing.T) {
			g := NewWithT(t)
			via := []*http.Request{request(c.from)}
			for range c.hops - 1 {
				via = append(via, request(c.to))
			}
			err := checkRedirect(request(c.to), via)
			if c.want == "" {
				g.Expect(err).NotTo(HaveOccurred())
				return
			}
			g.Expect(err).To(MatchError(ContainSubstring(c.want)))
		})
	}
}

func TestRedact(t *testing.T) {
	cases := map[string]struct {
		msg     string
		secrets []string
		want    string
	}{
		"secret":           {msg: "bad password Hunter2 for alice", secrets: []string{"Hunter2"}, want: "bad password *** for alice"},
		"longest first":    {msg: "token abcdef", secrets: []string{"abc", "abcdef"}, want: "token ***"},
		"basic header":     {msg: "sent Authorization: Basic YWxpY2U6cGFzcw==", want: "sent Authorization: Basic ***"},
		"bearer header":    {msg: "sent bearer eyJhbGciOi.x-y_z", want: "sent bearer ***"},
		"json token":       {msg: `body {"token": "s3cr3t", "expires_in": 60}`, want: `body {"token":"***", "expires_in": 60}`},
		"url userinfo":     {msg: `Get "https://alice:pw@registry.example/v2/"`, want: `Get "https://registry.example/v2/"`},
		"presigned url":    {msg: "GET https://s3.example/b?X-Amz-Signature=abc&X-Amz-Credential=AKIA: 403", want: "GET https://s3.example/b?X-Amz-Credential=***&X-Amz-Signature=***: 403"},
		"pagination kept":  {msg: "GET https://r.example/v2/app/tags/list?n=1000: 500", want: "GET https://r.example/v2/app/tags/list?n=1000: 500"},
		"nothing to hide":  {msg: "not found (404)", want: "not found (404)"},
		"artifact url":     {msg: "reading oci://127.0.0.1:5000/a/b:v1@sha256:0a: x", want: "reading oci://127.0.0.1:5000/a/b:v1@sha256:0a: x"},
		"empty secret":     {msg: "plain", secrets: []string{""}, want: "plain"},
		"secret in url qs": {msg: "GET https://r.example/x?token=Hunter2", secrets: []string{"Hunter2"}, want: "GET https://r.example/x?token=***"},
	}
	for title, c := range cases {
		t.Run(title, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(redact(c.msg, c.secrets...)).To(Equal(c.want))
		})
	}
	g := NewWithT(t)
	g.Expect(slices.Contains(Options{Username: "u", Password: "p"}.credentials(), basicAuth("u", "p"))).To(BeTrue())
}
