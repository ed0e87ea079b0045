package metrics

import (
	"context"
	"net/url"
	"runtime"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	clientmetrics "k8s.io/client-go/tools/metrics"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// RequestLatency is rest_client_request_duration_seconds, named as
// Kubernetes names it: how long the controllers' requests to the API
// server take, by verb. (controller-runtime counts them, by code, in
// rest_client_requests_total.)
var RequestLatency = prometheus.NewHistogramVec(
	prometheus.HistogramOpts{
		Name:    "rest_client_request_duration_seconds",
		Help:    "Request latency in seconds, by verb and host.",
		Buckets: []float64{0.005, 0.025, 0.1, 0.25, 0.5, 1, 2, 4, 8, 15, 30, 60},
	},
	[]string{"verb", "host"},
)

// RateLimiterLatency is rest_client_rate_limiter_duration_seconds: how
// long requests waited for the client's own rate limiter (its QPS and
// burst): the controllers throttling themselves.
var RateLimiterLatency = prometheus.NewHistogramVec(
	prometheus.HistogramOpts{
		Name:    "rest_client_rate_limiter_duration_seconds",
		Help:    "Client-side rate limiter latency in seconds, by verb and host.",
		Buckets: []float64{0.005, 0.025, 0.1, 0.25, 0.5, 1, 2, 4, 8, 15, 30, 60},
	},
	[]string{"verb", "host"},
)

// MemoryLimit is windlass_memory_limit_bytes: the memory limit of the
// controller's container, when the install says it (see SetMemoryLimit).
var MemoryLimit = prometheus.NewGauge(prometheus.GaugeOpts{
	Name: "windlass_memory_limit_bytes",
	Help: "The memory limit of the controller's container, in bytes.",
})

func init() {
	crmetrics.Registry.MustRegister(RequestLatency, RateLimiterLatency, BuildInfo)
	// controller-runtime registers client-go's request results only;
	// client-go reads these adapters for every request made after.
	clientmetrics.RequestLatency = latencyAdapter{histogram: RequestLatency, count: true}
	clientmetrics.RateLimiterLatency = latencyAdapter{histogram: RateLimiterLatency}
}

// BuildInfo is windlass_build_info: 1, with the version of the binary
// that runs the controllers. The alert rules select Windlass's processes
// by it.
var BuildInfo = prometheus.NewGaugeVec(prometheus.GaugeOpts{
	Name: "windlass_build_info",
	Help: "Always 1; its labels say which version of Windlass runs.",
}, []string{"version", "goversion"})

// SetBuildInfo exports the version of the running binary.
func SetBuildInfo(version string) {
	BuildInfo.Reset()
	BuildInfo.WithLabelValues(version, runtime.Version()).Set(1)
}

// registerMemoryLimit registers MemoryLimit once, when a limit is known:
// without one, the series is absent rather than zero.
var registerMemoryLimit sync.Once

// SetMemoryLimit exports the container's memory limit, in bytes: the
// alerts compare the process's memory with it.
func SetMemoryLimit(bytes int64) {
	registerMemoryLimit.Do(func() { crmetrics.Registry.MustRegister(MemoryLimit) })
	MemoryLimit.Set(float64(bytes))
}

// latencyAdapter observes client-go's latencies in a histogram; with
// count, it also counts the requests in APIRequests.
type latencyAdapter struct {
	histogram *prometheus.HistogramVec
	count     bool
}

// Observe observes latency for a request of verb (its HTTP method) to u.
func (a latencyAdapter) Observe(_ context.Context, verb string, u url.URL, latency time.Duration) {
	a.histogram.WithLabelValues(verb, u.Host).Observe(latency.Seconds())
	if a.count {
		countRequest(verb, u)
	}
}
