package metrics

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	goruntime "runtime"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	kustomizev1 "github.com/windlass-dev/windlass/api/kustomize/v1"
	"github.com/windlass-dev/windlass/api/meta"
	sourcev1 "github.com/windlass-dev/windlass/api/source/v1"
	"github.com/windlass-dev/windlass/internal/kinds"
	"github.com/windlass-dev/windlass/internal/scheme"
	"github.com/windlass-dev/windlass/internal/state"
)

// application returns the GitRepository and the Kustomization of
// application i, Ready, as a run of the benchmark leaves them.
func application(i int) []client.Object {
	ready := []metav1.Condition{{Type: meta.ReadyCondition, Status: metav1.ConditionTrue, Reason: meta.SucceededReason,
		LastTransitionTime: metav1.Now(), ObservedGeneration: 1}}
	name := fmt.Sprintf("app-%04d", i)
	repo := &sourcev1.GitRepository{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "bench", Generation: 1}}
	repo.Spec.URL, repo.Spec.Interval = "http://127.0.0.1:8080/"+name+".git", metav1.Duration{Duration: time.Minute}
	repo.Status.Artifact = &meta.Artifact{Revision: "main@sha1:0123456789abcdef0123456789abcdef01234567", Size: ptr.To[int64](1024), LastUpdateTime: metav1.Now()}
	repo.Status.Conditions = ready
	ks := &kustomizev1.Kustomization{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "bench", Generation: 1}}
	ks.Spec.SourceRef.Name, ks.Spec.Interval = name, metav1.Duration{Duration: time.Minute}
	ks.Status.LastAppliedRevision, ks.Status.Conditions = repo.Status.Artifact.Revision, ready
	return []client.Object{repo, ks}
}

// BenchmarkScrapeOf1000Applications serves the metrics of 1,000
// applications (a GitRepository and a Kustomization each, every per-object
// series recorded as the runner records them) and scrapes them: ms/op is
// a scrape, heldMiB what the series of the applications hold between
// scrapes. Issue 29 asks for a scrape under 100 ms costing under 5 MiB.
func BenchmarkScrapeOf1000Applications(b *testing.B) {
	const apps = 1000
	var objs []client.Object
	for i := range apps {
		objs = append(objs, application(i)...)
	}
	c := newListReader(objs)
	objects.mu.Lock()
	objects.runs = map[objectKey]*objectRuns{}
	objects.mu.Unlock()
	held := heldBytes(func() {
		for _, obj := range objs {
			kind := obj.GetObjectKind().GroupVersionKind().Kind
			if kind == "" {
				kind = fmt.Sprintf("%T", obj)
			}
			RecordDuration(kind, obj, time.Now().Add(-time.Second))
			RecordSuspend(kind, obj, false)
			RecordRun(kind, obj, state.Ready, time.Now())
		}
	})
	r := &resources{sources: map[*resourceSource]struct{}{}}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go r.Serve(ctx, c, kinds.All, nil)
	reg := prometheus.NewRegistry()
	reg.MustRegister(Reconciles)
	for {
		r.mu.Lock()
		n := len(r.sources)
		r.mu.Unlock()
		if n == 1 {
			break
		}
		goruntime.Gosched()
	}
	h := handler(reg, r)
	var size int
	b.ResetTimer()
	req := httptest.NewRequest("GET", "/metrics", nil)
	for b.Loop() {
		w := &countingWriter{header: http.Header{}}
		h.ServeHTTP(w, req)
		size = w.n
	}
	b.ReportMetric(float64(held)/(1<<20), "heldMiB")
	b.ReportMetric(float64(size)/(1<<20), "bodyMiB")
}

// countingWriter is a ResponseWriter that counts what it is given.
type countingWriter struct {
	header http.Header
	n      int
}

func (w *countingWriter) Header() http.Header         { return w.header }
func (w *countingWriter) WriteHeader(int)             {}
func (w *countingWriter) Write(b []byte) (int, error) { w.n += len(b); return len(b), nil }

// listReader lists objects as the shared cache does without deep
// copies: the stored objects, copied into the list's items
// (apimeta.SetList).
type listReader struct {
	client.Reader
	byList map[string][]runtime.Object
}

// newListReader returns a listReader of objs.
func newListReader(objs []client.Object) *listReader {
	s := scheme.New()
	r := &listReader{byList: map[string][]runtime.Object{}}
	for _, obj := range objs {
		gvk, err := apiutil.GVKForObject(obj, s)
		if err != nil {
			panic(err)
		}
		r.byList[gvk.Kind+"List"] = append(r.byList[gvk.Kind+"List"], obj)
	}
	return r
}

// List sets list's items to the objects of its kind.
func (r *listReader) List(_ context.Context, list client.ObjectList, _ ...client.ListOption) error {
	name := reflect.TypeOf(list).Elem().Name()
	return apimeta.SetList(list, r.byList[name])
}

// heldBytes returns the heap that record leaves in use.
func heldBytes(record func()) uint64 {
	var before, after goruntime.MemStats
	goruntime.GC()
	goruntime.ReadMemStats(&before)
	record()
	goruntime.GC()
	goruntime.ReadMemStats(&after)
	if after.HeapAlloc < before.HeapAlloc {
		return 0
	}
	return after.HeapAlloc - before.HeapAlloc
}
