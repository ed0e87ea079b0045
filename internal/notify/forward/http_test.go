package forward

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/windlass-dev/windlass/internal/event"
	"github.com/windlass-dev/windlass/internal/kubeauth"
	"github.com/windlass-dev/windlass/internal/notify/dispatch"
	"github.com/windlass-dev/windlass/internal/scheme"
	"github.com/windlass-dev/windlass/internal/testutil"
)

// endpoint is a notification controller's event endpoint on loopback
// whose dispatcher sends what matches the team=web label to box; the
// first failures answers are 503. It admits the returned token, of the
// windlass service account of a namespace of the test.
func endpoint(t *testing.T, g *WithT, failures int32) (*httptest.Server, *inbox, string) {
	t.Helper()
	ns := env.CreateNamespace(t)
	token := testutil.ServiceAccountToken(g, env.Config, ns, "windlass")
	auth := &kubeauth.TokenReviewer{Client: env.Client, Allowed: []string{kubeauth.ServiceAccountUser(ns, "windlass")}}
	d := dispatch.New(dispatch.Options{})
	box := &inbox{}
	g.Expect(d.SetRule(dispatch.Rule{Key: "apps/web", Namespace: "apps", Severity: dispatch.SeverityError,
		Sources:  []dispatch.Source{{Kind: "Kustomization", Name: "*", MatchLabels: map[string]string{"team": "web"}}},
		Notifier: box, ProviderKey: "apps/p"})).To(Succeed())
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go func() { _ = d.Run(ctx) }()
	var failed atomic.Int32
	h := &Handler{Dispatcher: d, Auth: auth}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if failed.Add(1) <= failures {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv, box, token
}

func startPoster(t *testing.T, p *Poster) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go func() { _ = p.Start(ctx) }()
}

// TestPosterToHandler: events cross processes as the wire event with the
// object's labels and Ready hint: matchLabels select, a recovery resolves,
// and a 503 is retried.
func TestPosterToHandler(t *testing.T) {
	g := NewWithT(t)
	srv, box, token := endpoint(t, g, 1)
	p := &Poster{Sink: Sink{Scheme: scheme.New(), Controller: "kustomize-controller"}, URL: srv.URL, Backoff: 10 * time.Millisecond,
		Token: StaticToken(token)}
	startPoster(t, p)
	ctx := context.Background()
	p.Forward(ctx, kustomization(metav1.ConditionFalse), event.Event{Type: event.TypeWarning, Reason: "BuildFailed", Message: "kustomize build failed"})
	g.Eventually(box.messages).Should(HaveLen(1))
	p.Forward(ctx, kustomization(metav1.ConditionTrue), event.Event{Type: event.TypeNormal, Reason: "ReconciliationSucceeded", Message: "applied"})
	g.Eventually(box.messages).Should(HaveLen(2))
	got := box.messages()
	g.Expect(got[0].Message).To(Equal("kustomize build failed"))
	g.Expect(got[0].InvolvedObject.Kind).To(Equal("Kustomization"))
	g.Expect(got[1].Resolves).To(BeTrue())
	other := kustomization(metav1.ConditionFalse)
	other.Name, other.Labels = "api", map[string]string{"team": "api"}
	p.Forward(ctx, other, event.Event{Type: event.TypeWarning, Reason: "BuildFailed", Message: "another team's failure"})
	g.Consistently(box.messages, 300*time.Millisecond).Should(HaveLen(2), "matchLabels select by the labels the Poster sent")
}

// TestPosterNeverBlocks: with no endpoint to take them, Forward returns at
// once and the queue keeps the newest events.
func TestPosterNeverBlocks(t *testing.T) {
	g := NewWithT(t)
	p := &Poster{Sink: Sink{Scheme: scheme.New()}, URL: "http://127.0.0.1:1/", QueueSize: 5}
	for range 100 {
		p.Forward(context.Background(), kustomization(metav1.ConditionFalse), event.Event{Type: event.TypeWarning, Reason: "R", Message: "m"})
	}
	g.Expect(p.Dropped()).To(Equal(int64(95)))
}

// TestHandlerRefuses: from an admitted poster, a body over the bound, a
// body that is not an event and a GET are refused, and dispatch nothing.
func TestHandlerRefuses(t *testing.T) {
	g := NewWithT(t)
	srv, box, token := endpoint(t, g, 0)
	tests := []struct {
		method, body string
		want         int
	}{
		{http.MethodPost, strings.Repeat("x", MaxEventBytes+1), http.StatusRequestEntityTooLarge},
		{http.MethodPost, "{not json", http.StatusBadRequest},
		{http.MethodPost, `{"message":"no object"}`, http.StatusBadRequest},
		{http.MethodGet, "", http.StatusMethodNotAllowed},
	}
	for _, tt := range tests {
		req, err := http.NewRequest(tt.method, srv.URL, strings.NewReader(tt.body))
		g.Expect(err).NotTo(HaveOccurred())
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		g.Expect(err).NotTo(HaveOccurred())
		_ = resp.Body.Close()
		g.Expect(resp.StatusCode).To(Equal(tt.want), tt.body[:min(len(tt.body), 20)])
	}
	g.Expect(box.messages()).To(BeEmpty())
}
