// Package metrics holds the Prometheus metrics that Windlass's controllers
// export on their metrics port (Handler): the GitOps Toolkit's own
// (gotk_reconcile_duration_seconds, gotk_suspend_status and, read from the
// shared cache at scrape time, gotk_resource_info) with their names and
// labels, so that existing dashboards and alerts keep working, and
// Windlass's (windlass_*): how runs end, what sources fetch, what appliers
// apply, Helm actions, notifications, webhooks, images, gates, the API
// client and the memory limit. docs/operations.md lists them.
//
// The series about one object, thousands of them, are not client-library
// vectors: the runs' are kept compact per object (objects), the others
// are read from the cache, and Handler writes both straight into the
// exposition. Every series about one object is dropped when the object
// goes (Forget, or it goes from the cache); the others, registered with
// controller-runtime's registry, are per kind, per action or per result,
// bounded by the code.
package metrics

import (
	"cmp"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/client"
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

// The families of the objects' runs, written from objects at each scrape.
const (
	reconcileDurationName = "gotk_reconcile_duration_seconds"
	reconcileDurationHelp = "The duration in seconds of a GitOps Toolkit resource reconciliation."
	suspendStatusName     = "gotk_suspend_status"
	suspendStatusHelp     = "The current suspend status of a GitOps Toolkit resource."
	lastSuccessName       = "windlass_reconcile_last_success_timestamp_seconds"
	lastSuccessHelp       = "When a reconciliation last left the object Ready, in seconds since the epoch."
)

// gotkLabels are the labels of the GitOps Toolkit's per-object series.
var gotkLabels = []string{"kind", "name", "namespace"}

// bucketLabels are the le labels of durationBuckets, then +Inf.
var bucketLabels = func() []string {
	out := make([]string, 0, len(durationBuckets)+1)
	for _, b := range durationBuckets {
		out = append(out, string(appendValue(nil, b)))
	}
	return append(out, "+Inf")
}()

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

// objectStore holds the objectRuns of every object.
type objectStore struct {
	mu   sync.Mutex
	runs map[objectKey]*objectRuns
}

// objects are the runs the reconcilers record; Handler writes them.
var objects = &objectStore{runs: map[objectKey]*objectRuns{}}

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

// keyedRuns is the runs of one object, copied for a scrape.
type keyedRuns struct {
	key  objectKey
	runs objectRuns
}

// snapshot returns a copy of every object's runs, in the order of their
// keys, so that a scrape writes without holding the reconcilers up.
func (s *objectStore) snapshot() []keyedRuns {
	s.mu.Lock()
	out := make([]keyedRuns, 0, len(s.runs))
	for k, r := range s.runs {
		out = append(out, keyedRuns{k, *r})
	}
	s.mu.Unlock()
	slices.SortFunc(out, func(a, b keyedRuns) int {
		return cmp.Or(cmp.Compare(a.key.kind, b.key.kind), cmp.Compare(a.key.namespace, b.key.namespace), cmp.Compare(a.key.name, b.key.name))
	})
	return out
}

// runFamilies are the families objectStore.writeText writes.
var runFamilies = []string{reconcileDurationName, suspendStatusName, lastSuccessName}

// writeText writes the families of the objects' runs.
func (s *objectStore) writeText(t *textWriter) {
	if !t.wants(runFamilies...) {
		return
	}
	all := s.snapshot()
	t.family(reconcileDurationName, reconcileDurationHelp, "histogram")
	for _, o := range all {
		if o.runs.count == 0 {
			continue
		}
		values := []string{o.key.kind, o.key.name, o.key.namespace}
		var n uint64
		for i := range durationBuckets {
			n += o.runs.buckets[i]
			t.sample(reconcileDurationName+"_bucket", gotkLabels, values, "le", bucketLabels[i], float64(n))
		}
		t.sample(reconcileDurationName+"_bucket", gotkLabels, values, "le", "+Inf", float64(o.runs.count))
		t.sample(reconcileDurationName+"_sum", gotkLabels, values, "", "", o.runs.sum)
		t.sample(reconcileDurationName+"_count", gotkLabels, values, "", "", float64(o.runs.count))
	}
	t.family(suspendStatusName, suspendStatusHelp, "gauge")
	for _, o := range all {
		if o.runs.hasSuspend {
			t.sample(suspendStatusName, gotkLabels, []string{o.key.kind, o.key.name, o.key.namespace}, "", "", o.runs.suspend)
		}
	}
	t.family(lastSuccessName, lastSuccessHelp, "gauge")
	for _, o := range all {
		if o.runs.lastSuccess > 0 {
			t.sample(lastSuccessName, objectLabels, []string{o.key.kind, o.key.namespace, o.key.name}, "", "", o.runs.lastSuccess)
		}
	}
}

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
		r.lastSuccess = seconds(end)
	})
}

// Forget drops the series of the object key of the given kind, deleted,
// so that memory stays bounded as objects come and go.
func Forget(kind string, key client.ObjectKey) {
	objects.mu.Lock()
	defer objects.mu.Unlock()
	delete(objects.runs, objectKey{kind, key.Namespace, key.Name})
}

// Runs returns how many runs of the object key, of the given kind, were
// recorded: for the tests that check an object did not run.
func Runs(kind string, key client.ObjectKey) uint64 {
	objects.mu.Lock()
	defer objects.mu.Unlock()
	if r, ok := objects.runs[objectKey{kind, key.Namespace, key.Name}]; ok {
		return r.count
	}
	return 0
}

// Tracked reports whether series of the object key, of the given kind,
// are kept: for the tests of Forget.
func Tracked(kind string, key client.ObjectKey) bool {
	objects.mu.Lock()
	defer objects.mu.Unlock()
	_, ok := objects.runs[objectKey{kind, key.Namespace, key.Name}]
	return ok
}
