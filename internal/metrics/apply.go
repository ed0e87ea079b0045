package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Actions on applied objects, in the action label of AppliedObjects.
const (
	// ActionCreated: the object did not exist and was created.
	ActionCreated = "created"
	// ActionConfigured: the object existed and differed; it was changed.
	ActionConfigured = "configured"
	// ActionDeleted: the object was pruned (garbage collected).
	ActionDeleted = "deleted"
)

// AppliedObjects is windlass_applied_objects_total: the objects that
// appliers (Kustomizations) created, configured or deleted, per kind.
var AppliedObjects = prometheus.NewCounterVec(
	prometheus.CounterOpts{
		Name: "windlass_applied_objects_total",
		Help: "Objects an applier created, configured or deleted (pruned), by the applier's kind.",
	},
	[]string{kindLabel, "action"},
)

// DriftCorrections is windlass_drift_corrections_total: objects an applier
// changed back to what its revision declares, the revision unchanged.
var DriftCorrections = prometheus.NewCounterVec(
	prometheus.CounterOpts{
		Name: "windlass_drift_corrections_total",
		Help: "Objects an applier set back to what the applied revision declares (drift corrected), by the applier's kind.",
	},
	[]string{kindLabel},
)

// HelmActionDuration is windlass_helm_action_duration_seconds: how long
// Helm actions take (install, upgrade, test, rollback, uninstall).
var HelmActionDuration = prometheus.NewHistogramVec(
	prometheus.HistogramOpts{
		Name:    "windlass_helm_action_duration_seconds",
		Help:    "How long Helm actions take, by action (install, upgrade, test, rollback, uninstall).",
		Buckets: prometheus.ExponentialBucketsRange(10e-3, 1800, 12),
	},
	[]string{"action"},
)

// HelmActionFailures is windlass_helm_action_failures_total: the Helm
// actions that failed, by action.
var HelmActionFailures = prometheus.NewCounterVec(
	prometheus.CounterOpts{
		Name: "windlass_helm_action_failures_total",
		Help: "Helm actions that failed, by action.",
	},
	[]string{"action"},
)

func init() {
	crmetrics.Registry.MustRegister(AppliedObjects, DriftCorrections, HelmActionDuration, HelmActionFailures)
}

// RecordApplied adds n objects that an applier of the given kind acted on
// with action.
func RecordApplied(kind, action string, n int) {
	if n > 0 {
		AppliedObjects.WithLabelValues(kind, action).Add(float64(n))
	}
}

// RecordDriftCorrected adds n objects whose drift an applier of the given
// kind corrected.
func RecordDriftCorrected(kind string, n int) {
	if n > 0 {
		DriftCorrections.WithLabelValues(kind).Add(float64(n))
	}
}

// RecordHelmAction records a Helm action that began at start and ended
// with err.
func RecordHelmAction(action string, start time.Time, err error) {
	HelmActionDuration.WithLabelValues(action).Observe(time.Since(start).Seconds())
	if err != nil {
		HelmActionFailures.WithLabelValues(action).Inc()
	}
}
