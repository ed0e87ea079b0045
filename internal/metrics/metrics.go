// Package metrics registers the Prometheus metrics that every Windlass
// reconciler reports, with the names and labels of the GitOps Toolkit so
// that existing dashboards and alerts keep working.
package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// ReconcileDuration is gotk_reconcile_duration_seconds: how long
// reconciliations take, per object.
var ReconcileDuration = prometheus.NewHistogramVec(
	prometheus.HistogramOpts{
		Name:    "gotk_reconcile_duration_seconds",
		Help:    "The duration in seconds of a GitOps Toolkit resource reconciliation.",
		Buckets: prometheus.ExponentialBucketsRange(10e-3, 1800, 10),
	},
	[]string{"kind", "name", "namespace"},
)

// SuspendStatus is gotk_suspend_status: 1 while an object is suspended.
var SuspendStatus = prometheus.NewGaugeVec(
	prometheus.GaugeOpts{
		Name: "gotk_suspend_status",
		Help: "The current suspend status of a GitOps Toolkit resource.",
	},
	[]string{"kind", "name", "namespace"},
)

func init() {
	crmetrics.Registry.MustRegister(ReconcileDuration, SuspendStatus)
}

// RecordDuration observes the time since start for obj of the given kind.
func RecordDuration(kind string, obj client.Object, start time.Time) {
	ReconcileDuration.WithLabelValues(kind, obj.GetName(), obj.GetNamespace()).Observe(time.Since(start).Seconds())
}

// RecordSuspend records whether obj is suspended.
func RecordSuspend(kind string, obj client.Object, suspended bool) {
	v := 0.0
	if suspended {
		v = 1
	}
	SuspendStatus.WithLabelValues(kind, obj.GetName(), obj.GetNamespace()).Set(v)
}

// Forget drops the series of the object key of the given kind, deleted,
// so that memory stays bounded as objects come and go.
func Forget(kind string, key client.ObjectKey) {
	labels := prometheus.Labels{"kind": kind, "name": key.Name, "namespace": key.Namespace}
	ReconcileDuration.Delete(labels)
	SuspendStatus.Delete(labels)
}
