package repository

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync/atomic"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/windlass-dev/windlass/internal/testutil/helmtest"
)

func TestSharedTransport(t *testing.T) {
	repo := helmtest.NewRepo(t, helmtest.WithTLS())
	other := helmtest.NewRepo(t, helmtest.WithClientCertAuth())
	proxy, err := url.Parse("http://proxy.example:3128")
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	ca := map[string][]byte{"ca.crt": repo.CAPEM()}
	tests := []struct {
		name     string
		a, b     ClientOptions
		wantSame bool
	}{
		{name: "defaults", a: ClientOptions{}, b: ClientOptions{Username: "x", Timeout: 1}, wantSame: true},
		{name: "equal CA data", a: ClientOptions{CertData: ca}, b: ClientOptions{CertData: map[string][]byte{"ca.crt": repo.CAPEM()}}, wantSame: true},
		{name: "client certificate added", a: ClientOptions{CertData: ca}, b: ClientOptions{CertData: map[string][]byte{
			"ca.crt": repo.CAPEM(), "tls.crt": other.ClientCertPEM(), "tls.key": other.ClientKeyPEM()}}},
		{name: "other CA", a: ClientOptions{CertData: ca}, b: ClientOptions{CertData: map[string][]byte{"ca.crt": other.CAPEM()}}},
		{name: "CA or none", a: ClientOptions{CertData: ca}, b: ClientOptions{}},
		{name: "proxy", a: ClientOptions{Proxy: proxy}, b: ClientOptions{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			a, err := sharedTransport(tt.a)
			g.Expect(err).NotTo(HaveOccurred())
			b, err := sharedTransport(tt.b)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(a == b).To(Equal(tt.wantSame))
		})
	}
}

func TestProxy(t *testing.T) {
	g := NewWithT(t)
	repo := helmtest.NewRepo(t)
	repo.Add(t, helmtest.Chart(t, "a", "1.0.0"))
	var proxied atomic.Int32
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		proxied.Add(1)
		out, err := http.NewRequestWithContext(r.Context(), r.Method, r.URL.String(), nil)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		resp, err := http.DefaultTransport.RoundTrip(out)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		w.WriteHeader(resp.StatusCode)
		_, _ = w.Write(mustRead(g, resp))
	}))
	t.Cleanup(proxy.Close)
	proxyURL, err := url.Parse(proxy.URL)
	g.Expect(err).NotTo(HaveOccurred())

	_, err = fetchChart(context.Background(), repo.URL(), "a", "", ClientOptions{Proxy: proxyURL})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(proxied.Load()).To(Equal(int32(2)), "the index and the chart went through the proxy")
}

// mustRead reads a response body.
func mustRead(g Gomega, resp *http.Response) []byte {
	data, err := readLimited(resp, 1<<20)
	g.Expect(err).NotTo(HaveOccurred())
	return data
}
