package git

import (
	"context"
	"net"
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

func TestClone_HangingServerHonoursContext(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			defer conn.Close() // accept and never answer
		}
	}()
	for _, scheme := range []string{"http", "ssh"} {
		t.Run(scheme, func(t *testing.T) {
			g := NewWithT(t)
			rawURL := scheme + "://git@" + ln.Addr().String() + "/repo.git"
			var auth *AuthOptions
			if scheme == "ssh" {
				auth = authFor(t, rawURL, sshData(sshIdentityPEM(t, ""),
					[]byte("["+"127.0.0.1"+"]:1 "+string(authorizedKey(newSSHKey(t, "ed25519"))))))
			}
			c, _ := newTestClient(t, auth, nil)
			ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
			defer cancel()
			start := time.Now()
			_, err := c.Clone(ctx, rawURL, CheckoutOptions{Branch: "main"})
			g.Expect(err).To(MatchError(context.DeadlineExceeded))
			g.Expect(time.Since(start)).To(BeNumerically("<", 5*time.Second))
			t.Logf("error after %v: %v", time.Since(start), err)
		})
	}
}

func TestClone_ContextCancelled(t *testing.T) {
	g := NewWithT(t)
	f := newRefFixture(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	c, _ := newTestClient(t, nil, nil)
	_, err := c.Clone(ctx, f.repo.url(), CheckoutOptions{Branch: "main"})
	g.Expect(err).To(HaveOccurred())
}
