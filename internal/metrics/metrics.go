// Package metrics registers the Prometheus metrics that Windlass's
// controllers export on their metrics port: the GitOps Toolkit's own
// (gotk_reconcile_duration_seconds, gotk_suspend_status and, read from the
// shared cache at scrape time, gotk_resource_info) with their names and
// labels, so that existing dashboards and alerts keep working, and
// Windlass's (windlass_*): how runs end, what sources fetch, what appliers
// apply, Helm actions, notifications, webhooks, images, gates, the API
// client and the memory limit. docs/operations.md lists them.
//
// Every series about one object is dropped when the object goes (Forget,
// or it is read from the cache and goes with it); the others are per kind,
// per action or per result, bounded by the code.
package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// The labels of a series about one object in the windlass_* metrics. The
// namespace is exported_namespace, as a ServiceMonitor's scrape would
// rename it, so that the series read the same however they are scraped.
const (
	kindLabel      = "kind"
	namespaceLabel = "exported_namespace"
	nameLabel      = "name"
)

// objectLabels are the labels of a series about one object.
var objectLabels = []string{kindLabel, namespaceLabel, nameLabel}

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
	LastSuccess.DeleteLabelValues(kind, key.Namespace, key.Name)
}
