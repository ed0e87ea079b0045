package git

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"golang.org/x/crypto/ssh"
)

// A Clone whose server stops answering at any point (in the TLS or SSH
// handshake, with the SSH session open, in the middle of the reference
// advertisement or of the pack) returns soon after its context is
// cancelled, as a source's run must when the manager stops.
func TestClone_StalledServerEndsWithTheContext(t *testing.T) {
	for _, tc := range []struct {
		name  string
		start func(*testing.T, chan<- struct{}) (string, *AuthOptions)
	}{
		{"tls handshake", stalledTLSHandshake},
		{"ssh session", stalledSSHSession},
		{"trickled refs", trickledRefs},
		{"pack cut off", stalledPack},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			stalled := make(chan struct{}, 1)
			rawURL, auth := tc.start(t, stalled)
			c, _ := newTestClient(t, auth, nil)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			cloned := make(chan error, 1)
			go func() {
				_, err := c.Clone(ctx, rawURL, CheckoutOptions{Branch: "main"})
				cloned <- err
			}()
			g.Eventually(stalled).WithTimeout(10*time.Second).Should(Receive(), "the server never stalled")
			cancel()
			var err error
			g.Eventually(cloned).WithTimeout(5*time.Second).Should(Receive(&err), "the clone outlived its context")
			g.Expect(err).To(MatchError(context.Canceled))
		})
	}
}

// stalledTLSHandshake returns an https URL whose server accepts the
// connection and never answers the TLS handshake.
func stalledTLSHandshake(t *testing.T, stalled chan<- struct{}) (string, *AuthOptions) {
	addr := acceptAll(t, func(net.Conn) { signal(stalled) })
	return "https://" + addr + "/repo.git", nil
}

// acceptAll listens on a loopback port and serves every connection with
// serve, on a goroutine of its own; the listener and the connections are
// closed when the test ends. It returns the listener's address.
func acceptAll(t *testing.T, serve func(net.Conn)) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	t.Cleanup(func() {
		_ = ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			_ = c.Close()
		}
	})
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, conn)
			mu.Unlock()
			go serve(conn)
		}
	}()
	return ln.Addr().String()
}

// stalledSSHSession returns an ssh URL, and its credentials, whose server
// completes the handshake, accepts the session and its command, and never
// sends a byte of the reference advertisement.
func stalledSSHSession(t *testing.T, stalled chan<- struct{}) (string, *AuthOptions) {
	hostKey := newSSHKey(t, "ed25519")
	config := &ssh.ServerConfig{PublicKeyCallback: func(ssh.ConnMetadata, ssh.PublicKey) (*ssh.Permissions, error) {
		return nil, nil
	}}
	config.AddHostKey(hostKey)
	addr := acceptAll(t, func(conn net.Conn) { serveSilentSSH(conn, config, stalled) })
	rawURL := "ssh://git@" + addr + "/repo.git"
	_, port, _ := net.SplitHostPort(addr)
	knownHosts := "[127.0.0.1]:" + port + " " + string(authorizedKey(hostKey))
	return rawURL, authFor(t, rawURL, sshData(sshIdentityPEM(t, ""), []byte(knownHosts)))
}

// serveSilentSSH accepts every session of conn and every request on it,
// and never writes to the session.
func serveSilentSSH(conn net.Conn, config *ssh.ServerConfig, stalled chan<- struct{}) {
	_, chans, reqs, err := ssh.NewServerConn(conn, config)
	if err != nil {
		return
	}
	go ssh.DiscardRequests(reqs)
	for ch := range chans {
		_, requests, err := ch.Accept()
		if err != nil {
			return
		}
		go func() {
			for req := range requests {
				_ = req.Reply(true, nil)
				signal(stalled)
			}
		}()
	}
}

// trickledRefs returns an http URL whose server answers the reference
// advertisement one byte at a time, for ever.
func trickledRefs(t *testing.T, stalled chan<- struct{}) (string, *AuthOptions) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/x-git-upload-pack-advertisement")
		_, _ = w.Write([]byte("001e# service=git-upload-pack\n0000"))
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-r.Context().Done():
				return
			case <-tick.C:
			}
			if _, err := w.Write([]byte("f")); err != nil {
				return
			}
			w.(http.Flusher).Flush()
			signal(stalled)
		}
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/repo.git", nil
}

// stalledPack returns an http URL of a real repository whose server sends
// the first bytes of the pack, then nothing more.
func stalledPack(t *testing.T, stalled chan<- struct{}) (string, *AuthOptions) {
	s := newServed(t)
	backend, err := url.Parse(s.srv.MustStartHTTP(t))
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(backend)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/git-upload-pack") {
			w = &cutOffWriter{ResponseWriter: w, left: 64, stalled: stalled, done: r.Context().Done()}
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/repo.git", nil
}

// cutOffWriter writes left bytes of a response, then waits until done
// is closed.
type cutOffWriter struct {
	http.ResponseWriter
	left    int
	stalled chan<- struct{}
	done    <-chan struct{}
}

// Write writes what is left of the allowance, flushed; past it, it says
// the server stalled and waits for done.
func (w *cutOffWriter) Write(p []byte) (int, error) {
	n := min(len(p), w.left)
	if n > 0 {
		written, err := w.ResponseWriter.Write(p[:n])
		w.left -= written
		w.ResponseWriter.(http.Flusher).Flush()
		if err != nil {
			return written, err
		}
	}
	if n == len(p) {
		return n, nil
	}
	signal(w.stalled)
	<-w.done
	return n, http.ErrAbortHandler
}

// signal says, without waiting, that the server stalled.
func signal(stalled chan<- struct{}) {
	select {
	case stalled <- struct{}{}:
	default:
	}
}
