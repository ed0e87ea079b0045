package netguard

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

// Every class of address is refused by the policy that does not allow it,
// and by no other; the addresses are those of security-2 risk 8.
func TestPolicy_Check(t *testing.T) {
	strict := Policy{}
	providers := Policy{AllowPrivate: true}
	all := Policy{AllowLinkLocal: true, AllowLoopback: true, AllowPrivate: true}
	tests := []struct {
		addr string
		// want is the error of strict, then of providers; all allows all.
		wantStrict, wantProviders error
	}{
		{"169.254.169.254", ErrLinkLocal, ErrLinkLocal},
		{"fe80::1", ErrLinkLocal, ErrLinkLocal},
		{"fd00:ec2::254", ErrLinkLocal, ErrLinkLocal},
		{"100.100.100.200", ErrLinkLocal, ErrLinkLocal},
		{"::ffff:169.254.169.254", ErrLinkLocal, ErrLinkLocal},
		{"127.0.0.1", ErrLoopback, ErrLoopback},
		{"127.8.0.1", ErrLoopback, ErrLoopback},
		{"::1", ErrLoopback, ErrLoopback},
		{"0.0.0.0", ErrLoopback, ErrLoopback},
		{"::", ErrLoopback, ErrLoopback},
		{"::ffff:127.0.0.1", ErrLoopback, ErrLoopback},
		{"10.96.0.10", ErrPrivate, nil},
		{"172.20.1.1", ErrPrivate, nil},
		{"192.168.1.1", ErrPrivate, nil},
		{"100.64.0.1", ErrPrivate, nil},
		{"fd12:3456::1", ErrPrivate, nil},
		{"140.82.112.3", nil, nil},
		{"2606:50c0:8000::153", nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.addr, func(t *testing.T) {
			g := NewWithT(t)
			ip := netip.MustParseAddr(tt.addr)
			expect := func(err, want error) {
				if want == nil {
					g.Expect(err).NotTo(HaveOccurred())
				} else {
					g.Expect(errors.Is(err, want)).To(BeTrue(), "%v", err)
				}
			}
			expect(strict.Check(ip), tt.wantStrict)
			expect(providers.Check(ip), tt.wantProviders)
			expect(all.Check(ip), nil)
			expect(strict.CheckHost("["+tt.addr+"]"), tt.wantStrict)
		})
	}
}

// A name is checked when dialled, a literal at once; localhost is
// loopback whatever it resolves to.
func TestPolicy_CheckHost(t *testing.T) {
	g := NewWithT(t)
	p := Policy{AllowPrivate: true}
	g.Expect(p.CheckHost("hooks.example.com")).To(Succeed())
	g.Expect(errors.Is(p.CheckHost("localhost"), ErrLoopback)).To(BeTrue())
	g.Expect(errors.Is(p.CheckHost("LOCALHOST."), ErrLoopback)).To(BeTrue())
	g.Expect(errors.Is(p.CheckHost("fe80::1%eth0"), ErrLinkLocal)).To(BeTrue())
	g.Expect(Policy{AllowLoopback: true}.CheckHost("localhost")).To(Succeed())
}

// The dialer refuses what a name resolves to: a client with it cannot
// reach a server on loopback by the name localhost, and reaches it when
// the policy allows loopback.
func TestPolicy_Dialer(t *testing.T) {
	g := NewWithT(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) }))
	defer srv.Close()
	_, port, err := net.SplitHostPort(srv.Listener.Addr().String())
	g.Expect(err).NotTo(HaveOccurred())
	url := "http://localhost:" + port + "/"

	get := func(p Policy) error {
		transport := &http.Transport{DialContext: p.Dialer(5 * time.Second).DialContext}
		defer transport.CloseIdleConnections()
		req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, url, nil)
		g.Expect(err).NotTo(HaveOccurred())
		resp, err := (&http.Client{Transport: transport}).Do(req)
		if err != nil {
			return err
		}
		return resp.Body.Close()
	}
	err = get(Policy{AllowPrivate: true})
	g.Expect(errors.Is(err, ErrLoopback)).To(BeTrue(), "%v", err)
	g.Expect(get(Policy{AllowLoopback: true})).To(Succeed())
}
