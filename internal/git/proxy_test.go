package git

import (
	"context"
	"encoding/base64"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	. "github.com/onsi/gomega"
)

// forwardProxy is a plain HTTP forward proxy that requires basic proxy
// credentials and counts the requests it forwarded.
type forwardProxy struct {
	user, password string
	forwarded      atomic.Int64
}

func (p *forwardProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	want := "Basic " + base64.StdEncoding.EncodeToString([]byte(p.user+":"+p.password))
	if r.Header.Get("Proxy-Authorization") != want {
		w.Header().Set("Proxy-Authenticate", `Basic realm="proxy"`)
		http.Error(w, "proxy authentication required", http.StatusProxyAuthRequired)
		return
	}
	out := r.Clone(r.Context())
	out.RequestURI = ""
	out.Header.Del("Proxy-Authorization")
	resp, err := http.DefaultTransport.RoundTrip(out)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	p.forwarded.Add(1)
	for k, v := range resp.Header {
		w.Header()[k] = v
	}
	w.WriteHeader(resp.StatusCode)
	_, _ = io.Copy(w, resp.Body)
}

func TestClone_ThroughProxy(t *testing.T) {
	const proxyPassword = "proxy-pa55-value"
	tests := []struct {
		name     string
		password string
		wantErr  bool
	}{
		{name: "authenticated proxy", password: proxyPassword},
		{name: "wrong proxy password", password: "not-the-" + proxyPassword, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			s := newServed(t)
			s.srv.SetBasicAuth(testUser, testPassword)
			rawURL := s.srv.MustStartHTTP(t) + "/repo.git"
			proxy := &forwardProxy{user: "proxy-user", password: proxyPassword}
			ps := httptest.NewServer(proxy)
			defer ps.Close()
			popts, err := NewProxyOptions(map[string][]byte{"address": []byte(ps.URL),
				"username": []byte("proxy-user"), "password": []byte(tt.password)})
			g.Expect(err).NotTo(HaveOccurred())
			c, _ := newTestClient(t, authFor(t, rawURL, basicAuthData(testPassword)), popts)
			commit, err := c.Clone(context.Background(), rawURL, CheckoutOptions{Branch: "main",
				LastObservedCommit: "main@sha1:0000000000000000000000000000000000000000"})
			if tt.wantErr {
				g.Expect(err).To(HaveOccurred())
				g.Expect(err.Error()).NotTo(ContainSubstring(tt.password))
				expectNoSecrets(g, err)
				g.Expect(proxy.forwarded.Load()).To(BeZero())
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(commit.Hash).To(Equal(s.head))
			// ls-remote, then the fetch's reference discovery and pack request.
			g.Expect(proxy.forwarded.Load()).To(BeNumerically(">=", 3))
		})
	}
}
