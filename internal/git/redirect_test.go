package git

import (
	"context"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"

	. "github.com/onsi/gomega"
)

// Security row 28: a repository host that redirects to another host must
// never make the Client forward the credentials it holds for the first one.
// The stories below put a credential-checking origin in front of a
// recording host; the recording host must never see the password, the
// token or the URL userinfo, whatever becomes of the clone.

// Authentication kinds of the redirect stories.
const (
	redirectAuthBasic    = "basic auth"
	redirectAuthBearer   = "bearer token"
	redirectAuthUserinfo = "URL userinfo"
)

// redirectCodes are the redirect statuses the origin answers with.
var redirectCodes = []int{
	http.StatusMovedPermanently,
	http.StatusFound,
	http.StatusTemporaryRedirect,
	http.StatusPermanentRedirect,
}

// redirectLeakMarkers are the substrings whose presence anywhere in a request
// proves a credential was forwarded: the password, the token and the basic
// auth encoding of user and password.
func redirectLeakMarkers() []string {
	return []string{testPassword, testToken,
		base64.StdEncoding.EncodeToString([]byte(testUser + ":" + testPassword))}
}

// redirectRequest is what a host received in one request.
type redirectRequest struct {
	method, host, requestURI string
	userinfo                 string
	header                   http.Header
}

// String renders the request in full, as a leak search and a failure
// message read it.
func (s redirectRequest) String() string {
	return fmt.Sprintf("%s %s (host %s, userinfo %q, header %v)", s.method, s.requestURI, s.host, s.userinfo, s.header)
}

// redirectSink records every request that reaches one host.
type redirectSink struct {
	mu   sync.Mutex
	seen []redirectRequest
}

func (s *redirectSink) record(r *http.Request) {
	var userinfo string
	if r.URL.User != nil {
		userinfo = r.URL.User.String()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seen = append(s.seen, redirectRequest{method: r.Method, host: r.Host, requestURI: r.RequestURI,
		userinfo: userinfo, header: r.Header.Clone()})
}

func (s *redirectSink) requests() []redirectRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]redirectRequest(nil), s.seen...)
}

func (s *redirectSink) reset() {
	s.mu.Lock()
	s.seen = nil
	s.mu.Unlock()
}

// redirectCredentialCheck reports whether a request carries the
// credentials a host expects; nil accepts every request.
type redirectCredentialCheck func(*http.Request) bool

// redirectCheck returns the check of the credentials of an auth kind.
func redirectCheck(kind string) redirectCredentialCheck {
	if kind == redirectAuthBearer {
		return func(r *http.Request) bool { return r.Header.Get("Authorization") == "Bearer "+testToken }
	}
	return func(r *http.Request) bool {
		u, p, ok := r.BasicAuth()
		return ok && u == testUser && p == testPassword
	}
}

// redirectOrigin is the host the clone URL names. It demands the
// credentials on every request, serves /<repo> from its backend and
// answers requests under /old/ with a redirect to target: the reference
// discovery GET by default, the upload-pack POST when redirectPOST is set
// (the discovery GET is then served from the backend).
type redirectOrigin struct {
	redirectSink
	check        redirectCredentialCheck
	code         int
	target       string // base URL that /old/ moves to
	redirectPOST bool
	backend      http.Handler
}

func (o *redirectOrigin) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	o.record(r)
	if !o.check(r) {
		w.Header().Set("WWW-Authenticate", `Basic realm="origin"`)
		http.Error(w, "origin: authentication required", http.StatusUnauthorized)
		return
	}
	rest, moved := strings.CutPrefix(r.URL.Path, "/old/")
	if !moved {
		o.backend.ServeHTTP(w, r)
		return
	}
	if (r.Method == http.MethodPost) == o.redirectPOST {
		loc := o.target + "/" + rest
		if r.URL.RawQuery != "" {
			loc += "?" + r.URL.RawQuery
		}
		w.Header().Set("Location", loc)
		w.WriteHeader(o.code)
		return
	}
	r2 := r.Clone(r.Context())
	r2.URL.Path, r2.URL.RawPath = "/"+rest, ""
	o.backend.ServeHTTP(w, r2)
}

// redirectTarget is the host the origin redirects to: it records every
// request, demands credentials when check is set, and serves its backend.
type redirectTarget struct {
	redirectSink
	check   redirectCredentialCheck
	backend http.Handler
}

func (h *redirectTarget) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.record(r)
	if h.check != nil && !h.check(r) {
		w.Header().Set("WWW-Authenticate", `Basic realm="target"`)
		http.Error(w, "target: authentication required", http.StatusUnauthorized)
		return
	}
	h.backend.ServeHTTP(w, r)
}

// redirectVhostProxy is a forward proxy that never dials out: it serves
// each request with the handler of the host the request names, so tests
// can use host names that resolve nowhere.
type redirectVhostProxy map[string]http.Handler

func (p redirectVhostProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h, ok := p[r.URL.Host]
	if !ok {
		http.Error(w, "proxy: unknown host "+r.URL.Host, http.StatusBadGateway)
		return
	}
	h.ServeHTTP(w, r)
}

// redirectBackend is a reverse proxy to the anonymous HTTP listener of s.
func redirectBackend(t *testing.T, s *served) http.Handler {
	t.Helper()
	u, err := url.Parse(s.srv.MustStartHTTP(t))
	if err != nil {
		t.Fatal(err)
	}
	return httputil.NewSingleHostReverseProxy(u)
}

// startRedirectHost serves h on a fresh port of ip, over TLS when tls is
// set, and returns the server; t.Cleanup closes it.
func startRedirectHost(t *testing.T, ip string, tls bool, h http.Handler) *httptest.Server {
	t.Helper()
	ln, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	if err != nil {
		t.Fatalf("listen on %s: %v", ip, err)
	}
	srv := httptest.NewUnstartedServer(h)
	_ = srv.Listener.Close()
	srv.Listener = ln
	if tls {
		srv.StartTLS()
	} else {
		srv.Start()
	}
	t.Cleanup(srv.Close)
	return srv
}

// redirectHostURL is the URL of srv with its host spelled name, keeping
// the port.
func redirectHostURL(t *testing.T, srv *httptest.Server, name string) string {
	t.Helper()
	u, err := url.Parse(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	return u.Scheme + "://" + net.JoinHostPort(name, u.Port())
}

// redirectCA is the PEM of the certificate httptest servers present.
func redirectCA(srv *httptest.Server) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
}

// redirectLayout is where the origin and the target live.
type redirectLayout struct {
	name string
	// wire starts the hosts around origin and target and returns the
	// origin and target base URLs, with the CA to trust (https) and the
	// proxy to go through, if any.
	wire redirectWire
	// refused is set when the redirect must be refused before any request
	// reaches the target; wantErr is then in the clone error.
	refused bool
	wantErr string
}

// redirectWire is redirectLayout.wire.
type redirectWire func(t *testing.T, origin, target http.Handler) (originURL, targetURL string, ca []byte,
	proxy *ProxyOptions)

// hostPair wires an origin on 127.0.0.1 (over TLS when originTLS is set)
// and a target listening on targetIP, addressed as targetName (over TLS
// when targetTLS is set).
func hostPair(originTLS bool, targetIP, targetName string, targetTLS bool) redirectWire {
	return func(t *testing.T, origin, target http.Handler) (string, string, []byte, *ProxyOptions) {
		osrv := startRedirectHost(t, "127.0.0.1", originTLS, origin)
		tsrv := startRedirectHost(t, targetIP, targetTLS, target)
		var ca []byte
		if originTLS {
			ca = redirectCA(osrv)
		}
		return redirectHostURL(t, osrv, "127.0.0.1"), redirectHostURL(t, tsrv, targetName), ca, nil
	}
}

// crossHostLayouts are origin/target pairs that are different origins:
// another host name, another address, another port, a subdomain (which
// net/http alone would forward an Authorization header to) and an https
// origin that redirects to plain http.
func crossHostLayouts() []redirectLayout {
	return []redirectLayout{
		{name: "127.0.0.1 to localhost", wire: hostPair(false, "127.0.0.1", "localhost", false)},
		{name: "127.0.0.1 to 127.0.0.2", wire: hostPair(false, "127.0.0.2", "127.0.0.2", false)},
		{name: "same address, another port", wire: hostPair(false, "127.0.0.1", "127.0.0.1", false)},
		// The httptest certificate covers 127.0.0.1 only of these names.
		{name: "https, another port", wire: hostPair(true, "127.0.0.1", "127.0.0.1", true)},
		{name: "subdomain through a proxy", wire: func(t *testing.T, o, tg http.Handler) (string, string, []byte,
			*ProxyOptions) {
			p := startRedirectHost(t, "127.0.0.1", false,
				redirectVhostProxy{"git.windlass.test": o, "mirror.git.windlass.test": tg})
			return "http://git.windlass.test", "http://mirror.git.windlass.test", nil, &ProxyOptions{URL: p.URL}
		}},
		{name: "https to plain http", refused: true, wantErr: "changes scheme",
			wire: hostPair(true, "127.0.0.1", "localhost", false)},
	}
}

// redirectClient returns the clone URL of repo.git under /old/ on origin
// and a Client holding the credentials of kind for it.
func redirectClient(t *testing.T, kind, originURL string, ca []byte, proxy *ProxyOptions) (*Client, string) {
	t.Helper()
	rawURL := originURL + "/old/repo.git"
	var data map[string][]byte
	switch kind {
	case redirectAuthBasic:
		data = basicAuthData(testPassword)
	case redirectAuthBearer:
		data = map[string][]byte{"bearerToken": []byte(testToken)}
	case redirectAuthUserinfo:
		u, err := url.Parse(rawURL)
		if err != nil {
			t.Fatal(err)
		}
		u.User = url.UserPassword(testUser, testPassword)
		rawURL = u.String()
	}
	if ca != nil {
		if data == nil {
			data = map[string][]byte{}
		}
		data["ca.crt"] = ca
	}
	c, _ := newTestClient(t, authFor(t, rawURL, data), proxy)
	return c, rawURL
}

// redirectCheckouts are the checkouts each story runs: a plain clone, and
// one that lists the references first (LastObservedCommit), so both the
// fetch and the ls-remote sessions meet the redirect.
var redirectCheckouts = []CheckoutOptions{
	{Branch: "main", ShallowClone: true},
	{Branch: "main", LastObservedCommit: "main@sha1:0000000000000000000000000000000000000000"},
}

// expectNoForwardedCredentials asserts that none of reqs carries an
// Authorization header, URL userinfo or any of the test credentials in any
// header or in the request line.
func expectNoForwardedCredentials(g *WithT, reqs []redirectRequest) {
	for _, r := range reqs {
		g.Expect(r.header.Values("Authorization")).To(BeEmpty(), "Authorization forwarded in %s", r)
		g.Expect(r.userinfo).To(BeEmpty(), "userinfo forwarded in %s", r)
		for _, marker := range redirectLeakMarkers() {
			g.Expect(r.String()).NotTo(ContainSubstring(marker), "credential forwarded in %s", r)
		}
	}
}

// expectSecretSent asserts that some request of reqs carried the
// credential of kind, so that a clean target proves stripping and not a
// client that never sent anything.
func expectSecretSent(g *WithT, kind string, reqs []redirectRequest) {
	want := "Basic " + base64.StdEncoding.EncodeToString([]byte(testUser+":"+testPassword))
	if kind == redirectAuthBearer {
		want = "Bearer " + testToken
	}
	var got []string
	for _, r := range reqs {
		got = append(got, r.header.Values("Authorization")...)
	}
	g.Expect(got).To(ContainElement(want), "the origin never received the %s", kind)
}

// TestClone_CrossHostRedirectNeverForwardsCredentials proves that when the
// origin answers the reference discovery with a 301, 302, 307 or 308 to
// another origin (another host name, another address, another port, a
// subdomain, or plain http from https), the target never receives the basic
// auth password, the bearer token or the URL userinfo the Client holds for
// the origin, in the discovery GET or in any later request. Where the
// redirect is followed the Client continues anonymously at the target: a
// target that demands credentials fails the clone with an authentication
// error, and an anonymous target is cloned from (its own commit is checked
// out). An https origin redirecting to http is refused before the target is
// contacted.
func TestClone_CrossHostRedirectNeverForwardsCredentials(t *testing.T) {
	for _, layout := range crossHostLayouts() {
		for _, kind := range []string{redirectAuthBasic, redirectAuthBearer, redirectAuthUserinfo} {
			for _, code := range redirectCodes {
				for _, targetAuth := range []bool{false, true} {
					if targetAuth && layout.refused {
						continue // the target is never reached
					}
					name := fmt.Sprintf("%s/%s/%d", layout.name, kind, code)
					if targetAuth {
						name += "/target demands credentials"
					}
					t.Run(name, func(t *testing.T) {
						runCrossHostRedirect(t, layout, kind, code, targetAuth)
					})
				}
			}
		}
	}
}

// runCrossHostRedirect runs one cross-host story with each checkout.
func runCrossHostRedirect(t *testing.T, layout redirectLayout, kind string, code int, targetAuth bool) {
	g := NewWithT(t)
	originRepo, targetRepo := newServed(t), newServed(t)
	targetHead := targetRepo.repo.MustCommit(t, "main", map[string]string{"moved.txt": "moved"}, "moved")
	origin := &redirectOrigin{check: redirectCheck(kind), code: code, backend: redirectBackend(t, originRepo)}
	target := &redirectTarget{backend: redirectBackend(t, targetRepo)}
	if targetAuth {
		target.check = redirectCheck(kind)
	}
	originURL, targetURL, ca, proxy := layout.wire(t, origin, target)
	origin.target = targetURL

	for _, opts := range redirectCheckouts {
		origin.reset()
		target.reset()
		c, rawURL := redirectClient(t, kind, originURL, ca, proxy)
		commit, err := c.Clone(context.Background(), rawURL, opts)
		t.Logf("listing first %t: commit %v, error %v; the target saw %d request(s)",
			opts.LastObservedCommit != "", commit, err, len(target.requests()))

		expectSecretSent(g, kind, origin.requests())
		expectNoForwardedCredentials(g, target.requests())
		if err != nil {
			expectNoSecrets(g, err)
		}
		switch {
		case layout.refused:
			g.Expect(err).To(MatchError(ContainSubstring(layout.wantErr)))
			g.Expect(target.requests()).To(BeEmpty())
		case targetAuth:
			g.Expect(err).To(HaveOccurred())
			g.Expect(IsAuthError(err)).To(BeTrue(), "IsAuthError(%v)", err)
			g.Expect(target.requests()).NotTo(BeEmpty())
		default:
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(commit.Hash).To(Equal(targetHead))
			// Discovery and pack request, at least, went to the target.
			g.Expect(len(target.requests())).To(BeNumerically(">=", 2))
		}
	}
}

// TestClone_RedirectOfThePackRequestIsRefused proves that a redirect of
// the upload-pack POST (after a normal reference discovery) to another
// host is not followed: go-git follows redirects of the initial request
// only, so the clone fails and the target receives nothing, credentials
// included.
func TestClone_RedirectOfThePackRequestIsRefused(t *testing.T) {
	for _, kind := range []string{redirectAuthBasic, redirectAuthBearer, redirectAuthUserinfo} {
		for _, code := range redirectCodes {
			t.Run(fmt.Sprintf("%s/%d", kind, code), func(t *testing.T) {
				g := NewWithT(t)
				originRepo, targetRepo := newServed(t), newServed(t)
				origin := &redirectOrigin{check: redirectCheck(kind), code: code, redirectPOST: true,
					backend: redirectBackend(t, originRepo)}
				target := &redirectTarget{backend: redirectBackend(t, targetRepo)}
				osrv, tsrv := startRedirectHost(t, "127.0.0.1", false, origin), startRedirectHost(t, "127.0.0.1", false, target)
				origin.target = redirectHostURL(t, tsrv, "localhost")

				c, rawURL := redirectClient(t, kind, redirectHostURL(t, osrv, "127.0.0.1"), nil, nil)
				_, err := c.Clone(context.Background(), rawURL, CheckoutOptions{Branch: "main"})
				g.Expect(err).To(MatchError(ContainSubstring("redirect on non-initial request")))
				expectNoSecrets(g, err)
				expectSecretSent(g, kind, origin.requests())
				g.Expect(target.requests()).To(BeEmpty())
			})
		}
	}
}

// TestClone_SameHostRedirectKeepsCredentials proves that a redirect to
// another path of the same origin (scheme, host and port) keeps the
// credentials: the origin demands them on every request, and the clone of
// the moved repository succeeds, with every request after the redirect
// authenticated.
func TestClone_SameHostRedirectKeepsCredentials(t *testing.T) {
	for _, kind := range []string{redirectAuthBasic, redirectAuthBearer, redirectAuthUserinfo} {
		for _, code := range redirectCodes {
			t.Run(fmt.Sprintf("%s/%d", kind, code), func(t *testing.T) {
				g := NewWithT(t)
				repo := newServed(t)
				origin := &redirectOrigin{check: redirectCheck(kind), code: code, backend: redirectBackend(t, repo)}
				srv := startRedirectHost(t, "127.0.0.1", false, origin)
				originURL := redirectHostURL(t, srv, "127.0.0.1")
				origin.target = originURL
				for _, opts := range redirectCheckouts {
					origin.reset()
					c, rawURL := redirectClient(t, kind, originURL, nil, nil)
					commit, err := c.Clone(context.Background(), rawURL, opts)
					g.Expect(err).NotTo(HaveOccurred())
					g.Expect(commit.Hash).To(Equal(repo.head))

					var moved []redirectRequest
					for _, r := range origin.requests() {
						if !strings.HasPrefix(r.requestURI, "/old/") {
							moved = append(moved, r)
						}
					}
					// The redirected discovery and the pack request, at least.
					g.Expect(len(moved)).To(BeNumerically(">=", 2))
					expectSecretSent(g, kind, moved)
				}
			})
		}
	}
}

// pushRedirectOrigin is the host a push URL names. It demands the
// credentials on every request and serves /old/<repo> from its backend,
// except the receive-pack reference discovery (the first request of a
// push), which it answers with a redirect to target.
type pushRedirectOrigin struct {
	redirectSink
	check   redirectCredentialCheck
	code    int
	target  string // base URL that /old/ moves to
	backend http.Handler
}

func (o *pushRedirectOrigin) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	o.record(r)
	if !o.check(r) {
		w.Header().Set("WWW-Authenticate", `Basic realm="origin"`)
		http.Error(w, "origin: authentication required", http.StatusUnauthorized)
		return
	}
	rest, ok := strings.CutPrefix(r.URL.Path, "/old/")
	if !ok {
		http.NotFound(w, r)
		return
	}
	if r.Method == http.MethodGet && r.URL.Query().Get("service") == "git-receive-pack" {
		w.Header().Set("Location", o.target+"/"+rest+"?"+r.URL.RawQuery)
		w.WriteHeader(o.code)
		return
	}
	r2 := r.Clone(r.Context())
	r2.URL.Path, r2.URL.RawPath = "/"+rest, ""
	o.backend.ServeHTTP(w, r2)
}

// TestPush_CrossHostRedirectNeverForwardsCredentials proves that when the
// origin answers a push's receive-pack discovery with a 301, 302, 307 or
// 308 to another origin (another host name, another address, another port,
// a subdomain, or plain http from https), the target never receives the
// basic auth password, the bearer token or the URL userinfo the Client
// holds for the origin. The target demands credentials, so the push fails
// (an authentication error where the redirect is followed, a refusal for
// https to http) with an error that holds no secret, and the origin's
// branch is unchanged.
func TestPush_CrossHostRedirectNeverForwardsCredentials(t *testing.T) {
	for _, layout := range crossHostLayouts() {
		for _, kind := range []string{redirectAuthBasic, redirectAuthBearer, redirectAuthUserinfo} {
			for _, code := range redirectCodes {
				t.Run(fmt.Sprintf("%s/%s/%d", layout.name, kind, code), func(t *testing.T) {
					g := NewWithT(t)
					originRepo, targetRepo := newServed(t), newServed(t)
					origin := &pushRedirectOrigin{check: redirectCheck(kind), code: code,
						backend: redirectBackend(t, originRepo)}
					target := &redirectTarget{check: redirectCheck(kind), backend: redirectBackend(t, targetRepo)}
					originURL, targetURL, ca, proxy := layout.wire(t, origin, target)
					origin.target = targetURL

					c, rawURL := redirectClient(t, kind, originURL, ca, proxy)
					w, _, err := c.Open(context.Background(), rawURL, CheckoutOptions{Branch: "main"})
					g.Expect(err).NotTo(HaveOccurred())
					editAndCommit(t, w, map[string]string{"deploy/app.yaml": "kind: Deployment"}, "Update images")
					origin.reset()

					err = w.Push(context.Background(), PushOptions{})
					t.Logf("push error %v; the target saw %d request(s)", err, len(target.requests()))

					g.Expect(err).To(HaveOccurred())
					expectNoSecrets(g, err)
					expectSecretSent(g, kind, origin.requests())
					expectNoForwardedCredentials(g, target.requests())
					if layout.refused {
						g.Expect(err).To(MatchError(ContainSubstring(layout.wantErr)))
						g.Expect(target.requests()).To(BeEmpty())
					} else {
						g.Expect(IsAuthError(err)).To(BeTrue(), "IsAuthError(%v)", err)
						g.Expect(target.requests()).NotTo(BeEmpty(), "the redirect was followed")
					}
					for _, s := range []*served{originRepo, targetRepo} {
						head, err := s.repo.Head("main")
						g.Expect(err).NotTo(HaveOccurred())
						g.Expect(head).To(Equal(s.head), "a branch moved")
					}
				})
			}
		}
	}
}
