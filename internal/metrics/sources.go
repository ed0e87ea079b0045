package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Results of a fetch, an action or a request, in the result label.
const (
	// ResultSuccess: it worked.
	ResultSuccess = "success"
	// ResultFailure: it failed.
	ResultFailure = "failure"
)

// SourceFetchDuration is windlass_source_fetch_duration_seconds: how long
// sources take to fetch what they publish (a clone, a pull, a download),
// per kind.
var SourceFetchDuration = prometheus.NewHistogramVec(
	prometheus.HistogramOpts{
		Name:    "windlass_source_fetch_duration_seconds",
		Help:    "How long a source takes to fetch what it publishes, by kind.",
		Buckets: prometheus.ExponentialBucketsRange(10e-3, 600, 12),
	},
	[]string{kindLabel},
)

// SourceFetches is windlass_source_fetches_total: fetches by kind and
// result (success, failure).
var SourceFetches = prometheus.NewCounterVec(
	prometheus.CounterOpts{
		Name: "windlass_source_fetches_total",
		Help: "Source fetches by kind and result (success, failure).",
	},
	[]string{kindLabel, "result"},
)

func init() {
	crmetrics.Registry.MustRegister(SourceFetchDuration, SourceFetches)
}

// RecordFetch records a fetch of a source of the given kind that began at
// start and ended with err.
func RecordFetch(kind string, start time.Time, err error) {
	SourceFetchDuration.WithLabelValues(kind).Observe(time.Since(start).Seconds())
	SourceFetches.WithLabelValues(kind, resultOf(err)).Inc()
}

// resultOf returns the result label of an outcome.
func resultOf(err error) string {
	if err != nil {
		return ResultFailure
	}
	return ResultSuccess
}
