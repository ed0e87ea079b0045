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
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
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

// durationBuckets are the upper bounds of gotk_reconcile_duration_seconds:
// the reference's ten exponential buckets, 10ms to 30m.
var durationBuckets = prometheus.ExponentialBucketsRange(10e-3, 1800, 10)

// The series of the objects' runs, collected from objects at each scrape.
var (
	reconcileDuration = prometheus.NewDesc("gotk_reconcile_duration_seconds",
		"The duration in seconds of a GitOps Toolkit resource reconciliation.", []string{"kind", "name", "namespace"}, nil)
	suspendStatus = prometheus.NewDesc("gotk_suspend_status",
		"The current suspend status of a GitOps Toolkit resource.", []string{"kind", "name", "namespace"}, nil)
	lastSuccess = prometheus.NewDesc("windlass_reconcile_last_success_timestamp_seconds",
		"When a reconciliation last left the object Ready, in seconds since the epoch.", objectLabels, nil)
)

// objectKey names one object of one kind.
type objectKey struct {
	kind, namespace, name string
}

// objectRuns is what the runs of one object recorded: a compact
// histogram of their durations, whether it is suspended, and when a run
// last left it Ready. Kept per object, it costs about a tenth of the
// client library's vectors (a histogram with its locks and native-bucket
// fields, per series).
type objectRuns struct {
	buckets     [durationBucketCount]uint64 // non-cumulative counts of durationBuckets
	count       uint64
	sum         float64
	suspend     float64
	hasSuspend  bool
	lastSuccess float64 // seconds since the epoch; 0 for never
}

// durationBucketCount is len(durationBuckets).
const durationBucketCount = 10

// objects holds the objectRuns of every object, and collects them.
type objectStore struct {
	mu   sync.Mutex
	runs map[objectKey]*objectRuns
}

// objects are the runs the reconcilers record, registered with
// controller-runtime's registry.
var objects = &objectStore{runs: map[objectKey]*objectRuns{}}

func init() {
	crmetrics.Registry.MustRegister(objects)
}

// update calls change with the runs of the object key, made if new.
func (s *objectStore) update(key objectKey, change func(*objectRuns)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.runs[key]
	if r == nil {
		r = &objectRuns{}
		s.runs[key] = r
	}
	change(r)
}

// Describe sends the descriptions of the series.
func (s *objectStore) Describe(ch chan<- *prometheus.Desc) {
	ch <- reconcileDuration
	ch <- suspendStatus
	ch <- lastSuccess
}

// Collect sends the series of every object.
func (s *objectStore) Collect(ch chan<- prometheus.Metric) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for key, r := range s.runs {
		if r.count > 0 {
			ch <- durationHistogram{runs: *r, labels: prometheus.MakeLabelPairs(reconcileDuration, []string{key.kind, key.name, key.namespace})}
		}
		if r.hasSuspend {
			ch <- prometheus.MustNewConstMetric(suspendStatus, prometheus.GaugeValue, r.suspend, key.kind, key.name, key.namespace)
		}
		if r.lastSuccess > 0 {
			ch <- prometheus.MustNewConstMetric(lastSuccess, prometheus.GaugeValue, r.lastSuccess, key.kind, key.namespace, key.name)
		}
	}
}

// durationHistogram is the gotk_reconcile_duration_seconds sample of one
// object: written straight from its counts, without the sorting of
// prometheus.NewConstHistogram, a scrape of thousands of objects being
// mostly these.
type durationHistogram struct {
	runs   objectRuns
	labels []*dto.LabelPair
}

// Desc returns the description of gotk_reconcile_duration_seconds.
func (h durationHistogram) Desc() *prometheus.Desc { return reconcileDuration }

// Write writes the histogram into m.
func (h durationHistogram) Write(m *dto.Metric) error {
	buckets := make([]*dto.Bucket, len(durationBuckets))
	var n uint64
	for i := range durationBuckets {
		n += h.runs.buckets[i]
		buckets[i] = &dto.Bucket{UpperBound: &durationBuckets[i], CumulativeCount: proto(n)}
	}
	m.Label = h.labels
	m.Histogram = &dto.Histogram{SampleCount: proto(h.runs.count), SampleSum: proto(h.runs.sum), Bucket: buckets}
	return nil
}

// proto returns a pointer to v, as the protobuf types hold their fields.
func proto[T any](v T) *T { return &v }

// RecordDuration observes the time since start for obj of the given kind.
func RecordDuration(kind string, obj client.Object, start time.Time) {
	seconds := time.Since(start).Seconds()
	objects.update(objectKey{kind, obj.GetNamespace(), obj.GetName()}, func(r *objectRuns) {
		for i, bound := range durationBuckets {
			if seconds <= bound {
				r.buckets[i]++
				break
			}
		}
		r.count++
		r.sum += seconds
	})
}

// RecordSuspend records whether obj is suspended.
func RecordSuspend(kind string, obj client.Object, suspended bool) {
	objects.update(objectKey{kind, obj.GetNamespace(), obj.GetName()}, func(r *objectRuns) {
		r.suspend, r.hasSuspend = 0, true
		if suspended {
			r.suspend = 1
		}
	})
}

// recordSuccess records that a run left obj Ready at end.
func recordSuccess(kind string, obj client.Object, end time.Time) {
	objects.update(objectKey{kind, obj.GetNamespace(), obj.GetName()}, func(r *objectRuns) {
		r.lastSuccess = float64(end.UnixMilli()) / 1000
	})
}

// Forget drops the series of the object key of the given kind, deleted,
// so that memory stays bounded as objects come and go.
func Forget(kind string, key client.ObjectKey) {
	objects.mu.Lock()
	defer objects.mu.Unlock()
	delete(objects.runs, objectKey{kind, key.Namespace, key.Name})
}

// Tracked reports whether series of the object key, of the given kind,
// are kept: for the tests of Forget.
func Tracked(kind string, key client.ObjectKey) bool {
	objects.mu.Lock()
	defer objects.mu.Unlock()
	_, ok := objects.runs[objectKey{kind, key.Namespace, key.Name}]
	return ok
}
