package httptransport

import (
	"crypto/tls"
	"encoding/pem"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
)

func TestTLSConfig(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok") }))
	defer srv.Close()
	caPEM := certPEM(srv.Certificate().Raw)
	for _, tc := range []struct {
		name    string
		data    map[string][]byte
		wantErr string
	}{
		{name: "no secret"},
		{name: "ca", data: map[string][]byte{KeyCA: caPEM}},
		{name: "empty secret", data: map[string][]byte{}, wantErr: "none of 'ca.crt'"},
		{name: "bad ca", data: map[string][]byte{KeyCA: []byte("not pem")}, wantErr: "'ca.crt' holds no PEM certificate"},
		{name: "cert without key", data: map[string][]byte{KeyClientCert: caPEM}, wantErr: "'tls.key' is missing"},
		{name: "key without cert", data: map[string][]byte{KeyClientKey: []byte("k")}, wantErr: "'tls.crt' is missing"},
		{name: "bad pair", data: map[string][]byte{KeyClientCert: caPEM, KeyClientKey: []byte("secret-key-material")}, wantErr: "not a valid PEM key pair"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			cfg, err := TLSConfig(tc.data)
			if tc.wantErr != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tc.wantErr)))
				g.Expect(err.Error()).NotTo(ContainSubstring("secret-key-material"))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			if tc.data == nil {
				g.Expect(cfg).To(BeNil())
				return
			}
			resp, err := (&http.Client{Transport: New(cfg, nil)}).Get(srv.URL)
			g.Expect(err).NotTo(HaveOccurred(), "the CA of ca.crt is trusted")
			resp.Body.Close()
		})
	}
}

func TestUntrustedServerIsRefused(t *testing.T) {
	g := NewWithT(t)
	srv := httptest.NewTLSServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer srv.Close()
	_, err := (&http.Client{Transport: New(&tls.Config{MinVersion: tls.VersionTLS12}, nil)}).Get(srv.URL)
	g.Expect(err).To(MatchError(ContainSubstring("certificate")))
}

func TestProxyURL(t *testing.T) {
	for _, tc := range []struct {
		name    string
		data    map[string][]byte
		want    string
		wantErr string
	}{
		{name: "no secret"},
		{name: "address", data: map[string][]byte{KeyProxyAddress: []byte("http://proxy:3128")}, want: "http://proxy:3128"},
		{name: "with credentials", data: map[string][]byte{KeyProxyAddress: []byte("http://proxy:3128"),
			KeyProxyUsername: []byte("u"), KeyProxyPassword: []byte("p4ss")}, want: "http://u:p4ss@proxy:3128"},
		{name: "no address", data: map[string][]byte{}, wantErr: "no 'address'"},
		{name: "not a URL", data: map[string][]byte{KeyProxyAddress: []byte("proxy")}, wantErr: "not a URL"},
		{name: "password alone", data: map[string][]byte{KeyProxyAddress: []byte("http://proxy"), KeyProxyPassword: []byte("p4ss")},
			wantErr: "both 'username' and 'password'"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			u, err := ProxyURL(tc.data)
			if tc.wantErr != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tc.wantErr)))
				g.Expect(err.Error()).NotTo(ContainSubstring("p4ss"))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			if tc.want == "" {
				g.Expect(u).To(BeNil())
				return
			}
			g.Expect(u.String()).To(Equal(tc.want))
		})
	}
}

// TestProxyCarriesRequests proves that the transport sends requests
// through the proxy, with its credentials.
func TestProxyCarriesRequests(t *testing.T) {
	g := NewWithT(t)
	var seen, auth string
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen, auth = r.URL.String(), r.Header.Get("Proxy-Authorization")
		io.WriteString(w, "via proxy")
	}))
	defer proxy.Close()
	u, err := url.Parse(proxy.URL)
	g.Expect(err).NotTo(HaveOccurred())
	u.User = url.UserPassword("u", "p")
	resp, err := (&http.Client{Transport: New(nil, u)}).Get("http://registry.invalid/v2/")
	g.Expect(err).NotTo(HaveOccurred())
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	g.Expect(string(body)).To(Equal("via proxy"))
	g.Expect(seen).To(Equal("http://registry.invalid/v2/"))
	g.Expect(strings.HasPrefix(auth, "Basic ")).To(BeTrue(), auth)
}

func certPEM(der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}
