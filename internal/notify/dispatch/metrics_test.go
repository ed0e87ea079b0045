package dispatch

import (
	"context"
	"fmt"
	"testing"

	. "github.com/onsi/gomega"
	promtestutil "github.com/prometheus/client_golang/prometheus/testutil"
	"k8s.io/apimachinery/pkg/types"

	"github.com/windlass-dev/windlass/internal/metrics"
	"github.com/windlass-dev/windlass/internal/notify"
	"github.com/windlass-dev/windlass/internal/testutil"
)

// counted returns the notifications of the Provider p so far, by
// "type/result", as windlass_notifications_total counts them. Unlike
// WithLabelValues, it creates no series.
func counted(p types.NamespacedName) map[string]float64 {
	return testutil.SeriesOf(metrics.Notifications, map[string]string{"exported_namespace": p.Namespace, "provider": p.Name}, "type", "result")
}

// providerRule is allKustomizations for the Provider p, of type slack.
func providerRule(key string, p types.NamespacedName, n notify.Notifier) Rule {
	r := allKustomizations(key, SeverityInfo, p.String(), n)
	r.Provider, r.ProviderType = p, "slack"
	return r
}

// TestMetricsCountEachResult: a message the provider takes counts sent, a
// duplicate and a failure folded into a flood count folded, a message
// given up on counts failed, each for its Provider and type.
func TestMetricsCountEachResult(t *testing.T) {
	g := NewWithT(t)
	ok := types.NamespacedName{Namespace: "metrics-each", Name: "ok"}
	refusing := types.NamespacedName{Namespace: "metrics-each", Name: "refusing"}
	d := New(Options{Now: newClock().Now})
	g.Expect(d.SetRule(providerRule("apps/ok", ok, &recorder{}))).To(Succeed())
	ctx := start(t, d)

	d.Dispatch(ctx, ksReady("web"), Object{})
	g.Eventually(func() map[string]float64 { return counted(ok) }).Should(Equal(map[string]float64{"slack/sent": 1}))
	d.Dispatch(ctx, ksReady("web"), Object{})
	g.Expect(counted(ok)).To(Equal(map[string]float64{"slack/sent": 1, "slack/folded": 1}), "a duplicate")

	d.Dispatch(ctx, ksError("api", "source 'apps' not found"), Object{})
	d.Dispatch(ctx, ksError("db", "source 'apps' not found"), Object{})
	g.Eventually(func() map[string]float64 { return counted(ok) }).Should(Equal(map[string]float64{"slack/sent": 2, "slack/folded": 2}),
		"the second failure of a flood is folded")

	g.Expect(d.SetRule(providerRule("apps/refusing", refusing, &recorder{post: func(context.Context, notify.Message) error {
		return &notify.StatusError{Code: 400}
	}}))).To(Succeed())
	d.Dispatch(ctx, ksReady("api"), Object{})
	g.Eventually(func() map[string]float64 { return counted(refusing) }).Should(Equal(map[string]float64{"slack/failed": 1}))
	g.Expect(promtestutil.ToFloat64(metrics.Notifications.WithLabelValues(ok.Namespace, ok.Name, "slack", metrics.NotificationSent))).
		To(Equal(3.0), "the other provider took it")
}

// TestMetricsCountDroppedAsFailed: a message dropped from a full queue was
// not delivered, and counts failed.
func TestMetricsCountDroppedAsFailed(t *testing.T) {
	g := NewWithT(t)
	p := types.NamespacedName{Namespace: "metrics-dropped", Name: "p"}
	d := New(Options{QueueSize: 2})
	g.Expect(d.SetRule(providerRule("apps/a", p, &recorder{}))).To(Succeed())
	for i := range 5 {
		d.Dispatch(context.Background(), ksReady(fmt.Sprintf("ks-%d", i)), Object{})
	}
	g.Expect(d.Stats().Dropped).To(Equal(int64(3)))
	g.Expect(counted(p)).To(Equal(map[string]float64{"slack/failed": 3}))
}

// TestForgottenProviderStaysForgotten: ForgetProvider drops the series of
// a deleted Provider, and a message still in flight for it does not bring
// them back; the Provider created again counts anew.
func TestForgottenProviderStaysForgotten(t *testing.T) {
	g := NewWithT(t)
	p := types.NamespacedName{Namespace: "metrics-forget", Name: "p"}
	release := make(chan struct{})
	n := &recorder{post: func(ctx context.Context, m notify.Message) error {
		if m.InvolvedObject.Name == "late" {
			<-release
		}
		return nil
	}}
	d := New(Options{})
	g.Expect(d.SetRule(providerRule("apps/a", p, n))).To(Succeed())
	ctx := start(t, d)
	d.Dispatch(ctx, ksReady("first"), Object{})
	g.Eventually(func() map[string]float64 { return counted(p) }).Should(Equal(map[string]float64{"slack/sent": 1}))
	d.Dispatch(ctx, ksReady("late"), Object{})
	g.Eventually(n.posted).Should(HaveLen(2), "the late message is in flight")

	d.ForgetProvider(p)
	g.Expect(counted(p)).To(BeEmpty())
	close(release)
	g.Eventually(func() int64 { return d.Stats().Sent }).Should(Equal(int64(2)))
	g.Expect(counted(p)).To(BeEmpty(), "the late delivery is not counted")

	g.Expect(d.SetRule(providerRule("apps/a", p, n))).To(Succeed())
	d.Dispatch(ctx, ksReady("again"), Object{})
	g.Eventually(func() map[string]float64 { return counted(p) }).Should(Equal(map[string]float64{"slack/sent": 1}))
}
