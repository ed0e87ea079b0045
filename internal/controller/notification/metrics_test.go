package notification

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	notificationv1beta3 "github.com/windlass-dev/windlass/api/notification/v1beta3"
	"github.com/windlass-dev/windlass/internal/metrics"
)

// seriesOf returns the values of the series of c whose labels include
// match, keyed by the values of the labels keys joined with "/". Unlike
// WithLabelValues, it creates no series.
func seriesOf(c prometheus.Collector, match map[string]string, keys ...string) map[string]float64 {
	ch := make(chan prometheus.Metric)
	go func() {
		c.Collect(ch)
		close(ch)
	}()
	out := map[string]float64{}
	for m := range ch {
		var pb dto.Metric
		if m.Write(&pb) != nil {
			continue
		}
		labels := map[string]string{}
		for _, l := range pb.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		if matches(labels, match) {
			values := make([]string, 0, len(keys))
			for _, k := range keys {
				values = append(values, labels[k])
			}
			out[strings.Join(values, "/")] = pb.GetCounter().GetValue()
		}
	}
	return out
}

// matches tells whether labels include match.
func matches(labels, match map[string]string) bool {
	for k, v := range match {
		if labels[k] != v {
			return false
		}
	}
	return true
}

// notifications returns the notifications of the Providers of ns so far,
// by "provider/type/result".
func notifications(ns string) func() map[string]float64 {
	return func() map[string]float64 {
		return seriesOf(metrics.Notifications, map[string]string{"exported_namespace": ns}, "provider", "type", "result")
	}
}

// receiverRequests returns the webhook requests of the Receivers of ns so
// far, by "name/result".
func receiverRequests(ns string) func() map[string]float64 {
	return func() map[string]float64 {
		return seriesOf(metrics.ReceiverRequests, map[string]string{"exported_namespace": ns}, "name", "result")
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
