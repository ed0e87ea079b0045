package dispatch

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/windlass-dev/windlass/internal/notify"
)

// webhook is a Notifier that posts the message's text to a URL with the
// shared HTTP client of the providers.
type webhook struct{ url string }

func (w webhook) Post(ctx context.Context, m notify.Message) error {
	cfg := notify.Config{AllowLoopback: true, Timeout: 5 * time.Second}
	return notify.Do(ctx, notify.Client(cfg), cfg, notify.Request{URL: w.url, Body: map[string]string{"text": notify.Text(m)}})
}

// server answers each request with the next status of codes (the last one
// once they run out) and counts the requests.
func server(t *testing.T, codes ...int) (*httptest.Server, *atomic.Int64) {
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		n := int(hits.Add(1))
		w.WriteHeader(codes[min(n, len(codes))-1])
	}))
	t.Cleanup(srv.Close)
	return srv, &hits
}

// start runs d until the test ends, and waits for Run to return.
func start(t *testing.T, d *Dispatcher) context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = d.Run(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return ctx
}

// TestRetry: a provider that fails with 500 then answers 200 is retried
// and the message delivered.
func TestRetry(t *testing.T) {
	g := NewWithT(t)
	srv, hits := server(t, http.StatusInternalServerError, http.StatusOK)
	d := New(Options{Backoff: time.Millisecond})
	g.Expect(d.SetRule(allKustomizations("apps/a", SeverityInfo, "apps/p", webhook{url: srv.URL}))).To(Succeed())
	ctx := start(t, d)
	d.Dispatch(ctx, ksReady("web"), Object{})
	g.Eventually(func() int64 { return d.Stats().Sent }).Should(Equal(int64(1)))
	g.Expect(hits.Load()).To(Equal(int64(2)))
	g.Expect(d.Stats().Retried).To(Equal(int64(1)))
	g.Expect(d.Stats().Failed).To(BeZero())
}

// TestGiveUp: a provider that keeps failing is given up after Attempts
// posts when the failure may pass, at once when it cannot.
func TestGiveUp(t *testing.T) {
	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close()
	tests := []struct {
		name        string
		codes       []int
		notifier    notify.Notifier
		timeout     time.Duration
		wantRetried int64
	}{
		{name: "503 every time", codes: []int{http.StatusServiceUnavailable}, wantRetried: 3},
		{name: "429 every time", codes: []int{http.StatusTooManyRequests}, wantRetried: 3},
		{name: "400: not retried", codes: []int{http.StatusBadRequest}, wantRetried: 0},
		{name: "connection refused", notifier: webhook{url: closed.URL}, wantRetried: 3},
		{name: "post timeout", wantRetried: 3, timeout: 20 * time.Millisecond, notifier: &recorder{post: func(ctx context.Context, _ notify.Message) error {
			<-ctx.Done()
			return ctx.Err()
		}}},
		{name: "panic", wantRetried: 0, notifier: &recorder{post: func(context.Context, notify.Message) error { panic("boom") }}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			var hits *atomic.Int64
			n := tt.notifier
			if n == nil {
				var srv *httptest.Server
				srv, hits = server(t, tt.codes...)
				n = webhook{url: srv.URL}
			}
			d := New(Options{Backoff: time.Millisecond, PostTimeout: tt.timeout})
			g.Expect(d.SetRule(allKustomizations("apps/a", SeverityInfo, "apps/p", n))).To(Succeed())
			ctx := start(t, d)
			d.Dispatch(ctx, ksReady("web"), Object{})
			g.Eventually(func() int64 { return d.Stats().Failed }).Should(Equal(int64(1)))
			g.Expect(d.Stats().Retried).To(Equal(tt.wantRetried))
			g.Expect(d.Stats().Sent).To(BeZero())
			if hits != nil {
				g.Expect(hits.Load()).To(Equal(tt.wantRetried + 1))
			}
		})
	}
}

func TestRetryable(t *testing.T) {
	tests := []struct {
		err  error
		want bool
	}{
		{&notify.StatusError{Code: 500}, true},
		{fmt.Errorf("slack: %w", &notify.StatusError{Code: 429}), true},
		{&notify.StatusError{Code: 401}, false},
		{&net.OpError{Op: "dial", Err: errors.New("connection refused")}, true},
		{fmt.Errorf("post: %w", context.DeadlineExceeded), true},
		{errors.New("invalid commitStatusExpr"), false},
	}
	for _, tt := range tests {
		t.Run(tt.err.Error(), func(t *testing.T) {
			NewWithT(t).Expect(retryable(tt.err)).To(Equal(tt.want))
		})
	}
}

// TestSlowProvider: while a provider hangs, Dispatch never waits for it,
// and the queue keeps the newest messages, counting those it drops.
func TestSlowProvider(t *testing.T) {
	g := NewWithT(t)
	release := make(chan struct{})
	slow := &recorder{post: func(ctx context.Context, _ notify.Message) error {
		select {
		case <-release:
		case <-ctx.Done():
		}
		return nil
	}}
	d := New(Options{QueueSize: 10})
	g.Expect(d.SetRule(allKustomizations("apps/a", SeverityInfo, "apps/slow", slow))).To(Succeed())
	ctx := start(t, d)
	d.Dispatch(ctx, ksReady("first"), Object{})
	g.Eventually(slow.posted).Should(HaveLen(1), "the worker hangs on the first message")

	// The provider hangs until release is closed, after the loop: had
	// Dispatch waited for it, the loop would never end. (How fast Dispatch
	// is, is BenchmarkDispatch's to say.)
	for i := range 1000 {
		d.Dispatch(ctx, ksReady(fmt.Sprintf("ks-%d", i)), Object{})
	}
	g.Expect(d.Stats().Dropped).To(Equal(int64(990)))

	close(release)
	g.Eventually(slow.posted).Should(HaveLen(11))
	for i, m := range slow.posted()[1:] {
		g.Expect(m.InvolvedObject.Name).To(Equal(fmt.Sprintf("ks-%d", 990+i)), "the oldest were dropped")
	}
}

// TestRunStops: when ctx ends, Run returns and every worker has ended,
// even those hanging on a provider; a dispatcher runs once.
func TestRunStops(t *testing.T) {
	g := NewWithT(t)
	before := runtime.NumGoroutine()
	var ended atomic.Int64
	hang := &recorder{post: func(ctx context.Context, _ notify.Message) error {
		<-ctx.Done()
		ended.Add(1)
		return ctx.Err()
	}}
	d := New(Options{})
	for i := range 3 {
		p := fmt.Sprintf("apps/p%d", i)
		g.Expect(d.SetRule(allKustomizations(p, SeverityInfo, p, hang))).To(Succeed())
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	d.Dispatch(ctx, ksReady("web"), Object{})
	g.Eventually(hang.posted).Should(HaveLen(3))

	cancel()
	g.Eventually(done).Should(Receive(BeNil()))
	g.Expect(ended.Load()).To(Equal(int64(3)), "Run returns once the posts in flight have ended")
	g.Eventually(runtime.NumGoroutine).Should(BeNumerically("<=", before))
	g.Expect(d.Run(context.Background())).To(MatchError(ContainSubstring("already")))
	g.Expect(d.Stats().Failed).To(BeZero(), "a post cut short by the end is not a failure")
}

// TestUnusedProviderWorkerStops: when no rule uses a provider any more,
// its worker delivers what is queued and ends.
func TestUnusedProviderWorkerStops(t *testing.T) {
	g := NewWithT(t)
	release := make(chan struct{})
	n := &recorder{post: func(context.Context, notify.Message) error {
		<-release
		return nil
	}}
	d := New(Options{})
	g.Expect(d.SetRule(allKustomizations("apps/a", SeverityInfo, "apps/p", n))).To(Succeed())
	ctx := start(t, d)
	d.Dispatch(ctx, ksReady("web"), Object{})
	d.Dispatch(ctx, ksReady("api"), Object{})
	g.Eventually(n.posted).Should(HaveLen(1))
	before := runtime.NumGoroutine()
	d.DeleteRule("apps/a")
	close(release)
	g.Eventually(n.posted).Should(HaveLen(2), "queued messages are delivered")
	g.Eventually(func() int {
		d.mu.Lock()
		defer d.mu.Unlock()
		return len(d.queues)
	}).Should(BeZero())
	g.Eventually(runtime.NumGoroutine).Should(BeNumerically("<", before))
}

// BenchmarkDispatch measures Dispatch with one matching rule whose
// provider takes every message at once: the cost a reconciler pays per
// event.
func BenchmarkDispatch(b *testing.B) {
	sink := &recorder{post: func(context.Context, notify.Message) error { return nil }}
	d := New(Options{QueueSize: 1 << 16})
	if err := d.SetRule(allKustomizations("apps/a", SeverityInfo, "apps/sink", sink)); err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = d.Run(ctx) }()
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		d.Dispatch(ctx, ksReady(fmt.Sprintf("ks-%d", i)), Object{})
	}
}

// TestBackoff: a provider that keeps failing is posted to again after
// waits that double from Backoff up to a minute, Attempts times in all.
func TestBackoff(t *testing.T) {
	tests := []struct {
		backoff time.Duration
		want    []time.Duration
	}{
		{time.Second, []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 16 * time.Second}},
		{20 * time.Second, []time.Duration{20 * time.Second, 40 * time.Second, time.Minute, time.Minute, time.Minute}},
	}
	for _, tt := range tests {
		t.Run(tt.backoff.String(), func(t *testing.T) {
			g := NewWithT(t)
			srv, hits := server(t, http.StatusServiceUnavailable)
			d := New(Options{Backoff: tt.backoff, Attempts: len(tt.want) + 1})
			waits := make(chan time.Duration, 10)
			d.sleep = func(_ context.Context, w time.Duration) bool {
				waits <- w
				return true
			}
			g.Expect(d.SetRule(allKustomizations("apps/a", SeverityInfo, "apps/p", webhook{url: srv.URL}))).To(Succeed())
			ctx := start(t, d)
			d.Dispatch(ctx, ksReady("web"), Object{})
			g.Eventually(func() int64 { return d.Stats().Failed }).Should(Equal(int64(1)))
			close(waits)
			var got []time.Duration
			for w := range waits {
				got = append(got, w)
			}
			g.Expect(got).To(Equal(tt.want))
			g.Expect(hits.Load()).To(Equal(int64(len(tt.want) + 1)))
		})
	}
}

// TestHungProviderDelaysNoOther: each provider has its own queue and
// worker: while one hangs on its first message, another gets every
// message, and the hung one gets its own once it answers.
func TestHungProviderDelaysNoOther(t *testing.T) {
	g := NewWithT(t)
	release := make(chan struct{})
	hung := &recorder{post: func(ctx context.Context, _ notify.Message) error {
		select {
		case <-release:
		case <-ctx.Done():
		}
		return nil
	}}
	healthy := &recorder{}
	d := New(Options{})
	g.Expect(d.SetRule(allKustomizations("apps/hung", SeverityInfo, "apps/hung", hung))).To(Succeed())
	g.Expect(d.SetRule(allKustomizations("apps/healthy", SeverityInfo, "apps/healthy", healthy))).To(Succeed())
	ctx := start(t, d)
	for i := range 10 {
		d.Dispatch(ctx, ksReady(fmt.Sprintf("ks-%d", i)), Object{})
	}
	g.Eventually(healthy.posted).Should(HaveLen(10))
	g.Expect(hung.posted()).To(HaveLen(1), "the hung provider still holds its first message")
	close(release)
	g.Eventually(hung.posted).Should(HaveLen(10))
}
