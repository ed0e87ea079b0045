package registry

import (
	"context"
	"encoding/base64"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
	. "github.com/onsi/gomega"
)

// TestPlainHTTPNeedsInsecure proves that plain HTTP is refused, before
// any connection, unless Insecure is set or the host is a loopback one.
func TestPlainHTTPNeedsInsecure(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") }))
	defer srv.Close()
	for _, tc := range []struct {
		name     string
		url      string
		insecure bool
		wantErr  string
	}{
		{name: "private address", url: "http://10.0.0.1/v2/", wantErr: "refusing plain HTTP to 10.0.0.1: set insecure"},
		{name: "public name", url: "http://registry.example.com/v2/", wantErr: "refusing plain HTTP"},
		{name: "loopback", url: srv.URL},
		{name: "localhost", url: strings.Replace(srv.URL, "127.0.0.1", "localhost", 1)},
		{name: "insecure", url: srv.URL, insecure: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			rt, err := Options{Insecure: tc.insecure}.transport()
			g.Expect(err).NotTo(HaveOccurred())
			resp, err := (&http.Client{Transport: rt}).Get(tc.url)
			if tc.wantErr != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tc.wantErr)))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			g.Expect(string(body)).To(Equal("ok"))
		})
	}
}

// TestRedirectGuards proves that a redirected request loses the
// Authorization header on another port, keeps it on the same host, and
// that a redirect from HTTPS to HTTP is refused.
func TestRedirectGuards(t *testing.T) {
	var seen []string
	target := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		seen = append(seen, r.Header.Get("Authorization"))
	}))
	defer target.Close()
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/same" {
			if r.URL.Query().Has("done") {
				seen = append(seen, r.Header.Get("Authorization"))
				return
			}
			http.Redirect(w, r, "/same?done", http.StatusFound)
			return
		}
		http.Redirect(w, r, target.URL+"/elsewhere", http.StatusFound)
	}))
	defer origin.Close()
	tlsOrigin := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target.URL+"/plain", http.StatusFound)
	}))
	defer tlsOrigin.Close()

	g := NewWithT(t)
	rt, err := Options{CA: certPEM(tlsOrigin.Certificate().Raw)}.transport()
	g.Expect(err).NotTo(HaveOccurred())
	// The client copies the header to every hop on the same host name,
	// whatever the port: the guard must drop it.
	client := &http.Client{Transport: rt}
	for _, path := range []string{"/other", "/same"} {
		req, err := http.NewRequest(http.MethodGet, origin.URL+path, nil)
		g.Expect(err).NotTo(HaveOccurred())
		req.Header.Set("Authorization", "Basic c2VjcmV0")
		resp, err := client.Do(req)
		g.Expect(err).NotTo(HaveOccurred())
		resp.Body.Close()
	}
	g.Expect(seen).To(Equal([]string{"", "Basic c2VjcmV0"}))

	_, err = client.Get(tlsOrigin.URL)
	g.Expect(err).To(MatchError(ContainSubstring("refusing a redirect from https://")))
}

func TestScrubber(t *testing.T) {
	g := NewWithT(t)
	var s scrubber
	s.addBasic("user", "hunter2-password")
	s.add("identity-token-value", "")
	msg := s.clean(`GET http://user:hunter2-password@proxy.example/v2/?token=abc: header "Basic dXNlcjpodW50ZXIyLXBhc3N3b3Jk" ` +
		`and Bearer eyJhbGciOiJIUzI1NiJ9.payload.sig, identity-token-value, hunter2-password`)
	for _, secret := range []string{"hunter2-password", "dXNlcjpodW50ZXIyLXBhc3N3b3Jk", "eyJhbGciOiJIUzI1NiJ9", "identity-token-value", "token=abc"} {
		g.Expect(msg).NotTo(ContainSubstring(secret))
	}
	g.Expect(msg).To(ContainSubstring("proxy.example/v2/"), "the address stays")
}

func TestClassify(t *testing.T) {
	for _, tc := range []struct {
		name      string
		err       error
		wantClass error
		wantText  string
	}{
		{name: "401", err: &transport.Error{StatusCode: 401}, wantClass: ErrAuth, wantText: "refused the credentials"},
		{name: "403", err: &transport.Error{StatusCode: 403}, wantClass: ErrAuth, wantText: "denied access"},
		{name: "404", err: &transport.Error{StatusCode: 404}, wantClass: ErrNotFound, wantText: "not found"},
		{name: "name unknown", err: &transport.Error{StatusCode: 400, Errors: []transport.Diagnostic{{Code: transport.NameUnknownErrorCode}}},
			wantClass: ErrNotFound},
		{name: "timeout", err: &url.Error{Op: "Get", URL: "https://r.example/v2/", Err: context.DeadlineExceeded}, wantClass: context.DeadlineExceeded, wantText: "within the timeout of 1m0s"},
		{name: "other", err: errors.New("boom\nsecond line"), wantText: "boom"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			var s scrubber
			err := s.fail("listing", tc.err, DefaultTimeout)
			g.Expect(err.Error()).To(HavePrefix("listing: "))
			g.Expect(err.Error()).To(ContainSubstring(tc.wantText))
			g.Expect(err.Error()).NotTo(ContainSubstring("\n"))
			if tc.wantClass != nil {
				g.Expect(errors.Is(err, tc.wantClass)).To(BeTrue())
			}
		})
	}
}

// TestScanThroughProxy proves that the scan goes through the proxy with
// its credentials, and that a proxy that refuses them is not told in the
// error.
func TestScanThroughProxy(t *testing.T) {
	reg := startRegistry(t, "", "", nil)
	push(t, reg.image("app"), []string{"1", "2"})
	var proxied []string
	var mu sync.Mutex
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Proxy-Authorization") != "Basic "+base64.StdEncoding.EncodeToString([]byte("proxy-user:proxy-pass-9f3")) {
			w.WriteHeader(http.StatusProxyAuthRequired)
			return
		}
		mu.Lock()
		proxied = append(proxied, r.URL.Path)
		mu.Unlock()
		out := r.Clone(r.Context())
		out.RequestURI = ""
		out.Header.Del("Proxy-Authorization")
		resp, err := http.DefaultTransport.RoundTrip(out)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		for k, v := range resp.Header {
			w.Header()[k] = v
		}
		w.WriteHeader(resp.StatusCode)
		_, _ = io.Copy(w, resp.Body)
	}))
	defer proxy.Close()

	for _, tc := range []struct {
		name    string
		pass    string
		wantErr bool
	}{
		{name: "accepted", pass: "proxy-pass-9f3"},
		{name: "refused", pass: "wrong-proxy-pass-9f3", wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			u, err := url.Parse(proxy.URL)
			g.Expect(err).NotTo(HaveOccurred())
			u.User = url.UserPassword("proxy-user", tc.pass)
			s := newStore(t)
			_, err = s.Scan(context.Background(), "apps", "app", Options{Image: reg.image("app"), Proxy: u})
			if tc.wantErr {
				g.Expect(err).To(HaveOccurred())
				g.Expect(err.Error()).NotTo(ContainSubstring(tc.pass))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(storedTags(t, s, "apps", "app")).To(Equal([]string{"1", "2"}))
			mu.Lock()
			defer mu.Unlock()
			g.Expect(proxied).To(ContainElement("/v2/app/tags/list"))
		})
	}
}
