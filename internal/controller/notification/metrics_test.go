package notification

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	notificationv1beta3 "github.com/windlass-dev/windlass/api/notification/v1beta3"
	"github.com/windlass-dev/windlass/internal/metrics"
	"github.com/windlass-dev/windlass/internal/testutil"
)

// notifications returns the notifications of the Providers of ns so far,
// by "provider/type/result".
func notifications(ns string) func() map[string]float64 {
	return func() map[string]float64 {
		return testutil.SeriesOf(metrics.Notifications, map[string]string{"exported_namespace": ns}, "provider", "type", "result")
	}
}

// receiverRequests returns the webhook requests of the Receivers of ns so
// far, by "name/result".
func receiverRequests(ns string) func() map[string]float64 {
	return func() map[string]float64 {
		return testutil.SeriesOf(metrics.ReceiverRequests, map[string]string{"exported_namespace": ns}, "name", "result")
	}
}

// TestNotificationMetrics: windlass_notifications_total counts, per
// Provider and type, the messages a provider took (sent), the repeats
// folded into one sent shortly before (folded) and the messages given up
// on (failed); a deleted Provider's series are dropped. The dispatcher's
// clock stands still, so that the repeat is within its window however
// long the retries take.
func TestNotificationMetrics(t *testing.T) {
	g := NewWithT(t)
	ns := env.CreateNamespace(t)
	ctx := context.Background()
	ok := newHook(t)
	down := &hook{Server: httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "down for maintenance", http.StatusServiceUnavailable)
	}))}
	t.Cleanup(down.Close)
	hookProvider := createProvider(g, ns, "hook", ok.URL, []*hook{ok})
	downProvider := createProvider(g, ns, "down", down.URL, []*hook{down})
	waitRule(g, createAlert(g, ns, "ops", "hook", "info", []notificationv1beta3.EventSource{kustomizations}))
	waitRule(g, createAlert(g, ns, "down", "down", "info", []notificationv1beta3.EventSource{kustomizations}))

	clock.Freeze()
	defer clock.Thaw()
	const revision = "main@sha1:9999999999999999999999999999999999999999"
	applied(ns, "apps", revision)
	g.Eventually(notifications(ns), 10*time.Second).Should(Equal(map[string]float64{
		"hook/generic/sent": 1, "down/generic/failed": 1}), "the failure is counted once its retries are over")
	g.Expect(ok.received()).To(HaveLen(1))

	applied(ns, "apps", revision) // the same event again
	g.Expect(notifications(ns)()).To(Equal(map[string]float64{
		"hook/generic/sent": 1, "hook/generic/folded": 1, "down/generic/failed": 1, "down/generic/folded": 1}))

	g.Expect(env.Client.Delete(ctx, hookProvider)).To(Succeed())
	g.Eventually(notifications(ns), 10*time.Second).Should(Equal(map[string]float64{
		"down/generic/failed": 1, "down/generic/folded": 1}), "the deleted Provider's series are dropped, the other's kept")
	g.Expect(env.Client.Delete(ctx, downProvider)).To(Succeed())
	g.Eventually(notifications(ns), 10*time.Second).Should(BeEmpty())
}
