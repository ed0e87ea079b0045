package metrics

import (
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/windlass-dev/windlass/internal/state"
)

// Reconciles is windlass_reconcile_total: the runs of each kind, by where
// they left the object (result: ready, progressing, failing, stalled,
// held, suspended).
var Reconciles = prometheus.NewCounterVec(
	prometheus.CounterOpts{
		Name: "windlass_reconcile_total",
		Help: "Reconciliations by kind and by where they left the object: ready, progressing, failing, stalled or held.",
	},
	[]string{kindLabel, "result"},
)

func init() {
	crmetrics.Registry.MustRegister(Reconciles)
}

// RecordRun records a run of obj, of the given kind, that ended at end
// leaving obj in state st.
func RecordRun(kind string, obj client.Object, st state.State, end time.Time) {
	Reconciles.WithLabelValues(kind, strings.ToLower(string(st))).Inc()
	if st == state.Ready {
		recordSuccess(kind, obj, end)
	}
}
