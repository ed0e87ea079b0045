package httpserver

import (
	"context"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

// TestShutdownLetsARequestInFlightFinish: when the context ends, the
// server stops taking connections but answers the request it is in the
// middle of, and Serve returns nil.
func TestShutdownLetsARequestInFlightFinish(t *testing.T) {
	g := NewWithT(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	g.Expect(err).NotTo(HaveOccurred())
	entered, release := make(chan struct{}), make(chan struct{})
	srv := &http.Server{ReadHeaderTimeout: time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		close(entered)
		<-release
		_, _ = io.WriteString(w, "finished")
	})}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, srv, ln, 10*time.Second) }()

	answer := make(chan string, 1)
	go func() {
		resp, err := http.Get("http://" + ln.Addr().String())
		if err != nil {
			answer <- err.Error()
			return
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		answer <- string(body)
	}()
	<-entered
	cancel()
	g.Consistently(done).ShouldNot(Receive(), "Serve waits for the request in flight")
	g.Eventually(func() error {
		conn, err := net.Dial("tcp", ln.Addr().String())
		if err == nil {
			conn.Close()
		}
		return err
	}).Should(HaveOccurred(), "no new connection is taken")
	close(release)
	g.Eventually(answer).Should(Receive(Equal("finished")))
	g.Eventually(done).Should(Receive(BeNil()))
}

// TestServeReturnsTheServersError: a server that cannot serve ends Serve
// with its error, without waiting for the context.
func TestServeReturnsTheServersError(t *testing.T) {
	g := NewWithT(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(ln.Close()).To(Succeed())
	err = Serve(context.Background(), &http.Server{ReadHeaderTimeout: time.Second}, ln, time.Second)
	g.Expect(err).To(MatchError(net.ErrClosed))
}

// TestListenAndServeRefusesATakenAddress: the listen error is returned.
func TestListenAndServeRefusesATakenAddress(t *testing.T) {
	g := NewWithT(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	g.Expect(err).NotTo(HaveOccurred())
	defer ln.Close()
	r := &Runnable{Server: &http.Server{ReadHeaderTimeout: time.Second}, Addr: ln.Addr().String(), Grace: time.Second}
	g.Expect(r.Start(context.Background())).To(MatchError(ContainSubstring("address already in use")))
	g.Expect(r.NeedLeaderElection()).To(BeFalse())
}
