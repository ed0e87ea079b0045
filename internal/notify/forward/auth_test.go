package forward

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/windlass-dev/windlass/internal/kubeauth"
	"github.com/windlass-dev/windlass/internal/notify/dispatch"
	"github.com/windlass-dev/windlass/internal/testutil"
)

// forgedSuccess is the review's attack: a "success" of a tenant's
// Kustomization that no controller reported, with the Ready hint.
const forgedSuccess = `{"involvedObject":{"kind":"Kustomization","namespace":"tenant","name":"app"},"severity":"info",` +
	`"reason":"ReconciliationSucceeded","message":"ok","metadata":{"revision":"main@sha1:0123456789abcdef0123456789abcdef01234567"},` +
	`"reportingController":"kustomize-controller"}`

// reviewCounter counts the TokenReviews a client creates.
type reviewCounter struct {
	next http.RoundTripper
	n    *atomic.Int64
}

// RoundTrip implements http.RoundTripper.
func (c reviewCounter) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/tokenreviews") {
		c.n.Add(1)
	}
	return c.next.RoundTrip(r)
}

// countedReviewer is a TokenReviewer allowing users whose TokenReviews
// are counted in reviews and whose logs go to logs.
func countedReviewer(g *WithT, reviews *atomic.Int64, logs *testutil.Logs, users ...string) *kubeauth.TokenReviewer {
	cfg := rest.CopyConfig(env.Config)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return reviewCounter{next: rt, n: reviews} })
	c, err := client.New(cfg, client.Options{Scheme: env.Scheme})
	g.Expect(err).NotTo(HaveOccurred())
	return &kubeauth.TokenReviewer{Client: c, Allowed: users, Log: zap.New(zap.WriteTo(logs))}
}

// tenantEndpoint serves a Handler with auth whose dispatcher sends every
// event of the tenant namespace's Kustomizations to the returned inbox.
func tenantEndpoint(t *testing.T, g *WithT, auth *kubeauth.TokenReviewer) (*httptest.Server, *inbox) {
	t.Helper()
	d := dispatch.New(dispatch.Options{})
	box := &inbox{}
	g.Expect(d.SetRule(dispatch.Rule{Key: "tenant/all", Namespace: "tenant", Severity: dispatch.SeverityInfo,
		Sources: []dispatch.Source{{Kind: "Kustomization", Name: "*"}}, Notifier: box, ProviderKey: "tenant/github"})).To(Succeed())
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go func() { _ = d.Run(ctx) }()
	srv := httptest.NewServer(&Handler{Dispatcher: d, Auth: auth})
	t.Cleanup(srv.Close)
	return srv, box
}

// postEvent POSTs body to url with token (none when empty) and returns the
// status.
func postEvent(g *WithT, url, token, body string) int {
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	g.Expect(err).NotTo(HaveOccurred())
	req.Header.Set(ReadyHeader, "true")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	g.Expect(err).NotTo(HaveOccurred())
	_ = resp.Body.Close()
	return resp.StatusCode
}

// TestEndpointRefusesForgedEvents is the review's attack (security-2, risk
// 9): a forged success posted with no token, with a token that is not a
// service account's, or with the token of a service account not allowed,
// is refused before its body is read and reaches no Alert; the token of
// the allowed service account is admitted, and its events dispatched,
// with one TokenReview for a burst.
func TestEndpointRefusesForgedEvents(t *testing.T) {
	g := NewWithT(t)
	ns := env.CreateNamespace(t)
	allowed := testutil.ServiceAccountToken(g, env.Config, ns, "windlass")
	intruder := testutil.ServiceAccountToken(g, env.Config, ns, "intruder")
	var reviews atomic.Int64
	logs := &testutil.Logs{}
	srv, box := tenantEndpoint(t, g, countedReviewer(g, &reviews, logs, kubeauth.ServiceAccountUser(ns, "windlass")))

	g.Expect(postEvent(g, srv.URL, "", forgedSuccess)).To(Equal(http.StatusUnauthorized))
	g.Expect(postEvent(g, srv.URL, "", strings.Repeat("x", MaxEventBytes+1))).To(Equal(http.StatusUnauthorized), "refused before the body is read")
	g.Expect(postEvent(g, srv.URL, "not-a-jwt", forgedSuccess)).To(Equal(http.StatusUnauthorized))
	g.Expect(reviews.Load()).To(BeZero(), "what is not shaped like a token costs no review")
	g.Expect(postEvent(g, srv.URL, "eyJhbGciOiJSUzI1NiJ9.e30.c2lnbmF0dXJl", forgedSuccess)).To(Equal(http.StatusUnauthorized))
	g.Expect(postEvent(g, srv.URL, intruder, forgedSuccess)).To(Equal(http.StatusForbidden))
	g.Expect(postEvent(g, srv.URL, intruder, forgedSuccess)).To(Equal(http.StatusForbidden))
	g.Expect(reviews.Load()).To(Equal(int64(2)), "a refused token is refused again without a review")
	g.Consistently(box.messages, 300*time.Millisecond).Should(BeEmpty(), "no forged event reaches an Alert")

	for range 5 {
		g.Expect(postEvent(g, srv.URL, allowed, forgedSuccess)).To(Equal(http.StatusAccepted))
	}
	g.Expect(reviews.Load()).To(Equal(int64(3)), "a burst of events from one poster costs one review")
	g.Eventually(box.messages).ShouldNot(BeEmpty())
	g.Expect(box.messages()[0].InvolvedObject.Name).To(Equal("app"))

	g.Expect(logs.Contains(kubeauth.ServiceAccountUser(ns, "intruder"))).To(BeTrue(), "the refused service account is named")
	for _, token := range []string{allowed, intruder} {
		g.Expect(logs.Contains(token)).To(BeFalse(), "no token is logged")
	}
}

// TestAdmissionsExpire: an admitted token is reviewed again once its
// verdict is AdmitTTL old, so that a service account deleted or taken off
// the list is refused within that time (and the API server's own cache of
// its verdicts, 10 s).
func TestAdmissionsExpire(t *testing.T) {
	g := NewWithT(t)
	ns := env.CreateNamespace(t)
	token := testutil.ServiceAccountToken(g, env.Config, ns, "windlass")
	var reviews atomic.Int64
	var clock atomic.Int64
	clock.Store(time.Now().UnixNano())
	auth := countedReviewer(g, &reviews, &testutil.Logs{}, kubeauth.ServiceAccountUser(ns, "windlass"))
	auth.Now = func() time.Time { return time.Unix(0, clock.Load()) }
	srv, _ := tenantEndpoint(t, g, auth)

	g.Expect(postEvent(g, srv.URL, token, forgedSuccess)).To(Equal(http.StatusAccepted))
	clock.Add(int64(kubeauth.DefaultAdmitTTL - time.Second))
	g.Expect(postEvent(g, srv.URL, token, forgedSuccess)).To(Equal(http.StatusAccepted))
	g.Expect(reviews.Load()).To(Equal(int64(1)))
	clock.Add(int64(time.Second))
	g.Expect(postEvent(g, srv.URL, token, forgedSuccess)).To(Equal(http.StatusAccepted))
	g.Expect(reviews.Load()).To(Equal(int64(2)))
}

// TestMadeUpTokensCostFewReviews: a flood of distinct made-up tokens
// costs at most a burst of TokenReviews; the rest are answered 429.
func TestMadeUpTokensCostFewReviews(t *testing.T) {
	g := NewWithT(t)
	var reviews atomic.Int64
	srv, box := tenantEndpoint(t, g, countedReviewer(g, &reviews, &testutil.Logs{}, kubeauth.ServiceAccountUser("flux-system", "windlass")))
	statuses := map[int]int{}
	for i := range 60 {
		statuses[postEvent(g, srv.URL, fmt.Sprintf("eyJhbGciOiJSUzI1NiJ9.e30.%d", i), forgedSuccess)]++
	}
	g.Expect(reviews.Load()).To(BeNumerically("<=", kubeauth.DefaultReviewBurst+kubeauth.DefaultReviewsPerSecond*5))
	g.Expect(statuses[http.StatusTooManyRequests]).To(BeNumerically(">", 0))
	g.Expect(statuses[http.StatusUnauthorized] + statuses[http.StatusTooManyRequests]).To(Equal(60))
	g.Expect(box.messages()).To(BeEmpty())
}
