package ui

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	gatingv1alpha1 "github.com/windlass-dev/windlass/api/gating/v1alpha1"
	kustomizev1 "github.com/windlass-dev/windlass/api/kustomize/v1"
	"github.com/windlass-dev/windlass/api/meta"
	sourcev1 "github.com/windlass-dev/windlass/api/source/v1"
	"github.com/windlass-dev/windlass/internal/kinds"
	"github.com/windlass-dev/windlass/internal/scheme"
)

// apps returns n applications: a GitRepository and a Kustomization each,
// one in a hundred failing.
func apps(n int) []client.Object {
	var objs []client.Object
	for i := range n {
		ns := fmt.Sprintf("team-%02d", i%50)
		src := &sourcev1.GitRepository{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("app-%04d", i), Generation: 1}}
		src.Status.Conditions = []metav1.Condition{cond(meta.ReadyCondition, "True", "Succeeded", "stored artifact for revision 'main@sha1:0123456789abcdef'")}
		ks := &kustomizev1.Kustomization{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("app-%04d", i), Generation: 1}}
		ks.Status.Conditions = []metav1.Condition{cond(meta.ReadyCondition, "True", "ReconciliationSucceeded", "Applied revision: main@sha1:0123456789abcdef")}
		if i%100 == 0 {
			ks.Status.Conditions = []metav1.Condition{cond(meta.ReadyCondition, "False", kustomizev1.BuildFailedReason, "kustomize build failed")}
		}
		objs = append(objs, src, ks)
	}
	return objs
}

// BenchmarkOverview1000 serves the overview of 1,000 applications (the
// issue's bound: 200 ms). The fake client copies every object it lists,
// as the cache does.
func BenchmarkOverview1000(b *testing.B) {
	c := fake.NewClientBuilder().WithScheme(scheme.New()).WithObjects(apps(1000)...).Build()
	h := (&Server{Reader: c, Kinds: kinds.All, Log: logr.Discard()}).Handler()
	b.ResetTimer()
	for range b.N {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, localRequest(http.MethodGet, "/", nil))
		if rec.Code != http.StatusOK {
			b.Fatalf("GET / answered %d", rec.Code)
		}
	}
}

// graphApps returns the applications of apps(n), each Kustomization with
// its GitRepository as its source and eight applied objects; one in two
// depends on the application before it in its namespace, one in ten
// waits behind its namespace's gate, which is closed.
func graphApps(n int) []client.Object {
	objs := apps(n)
	for i := range 50 {
		gate := &gatingv1alpha1.Gate{ObjectMeta: metav1.ObjectMeta{Namespace: fmt.Sprintf("team-%02d", i), Name: "freeze", Generation: 1}}
		gate.Status.Conditions = []metav1.Condition{cond(gatingv1alpha1.OpenedCondition, "False", "Default", "closed")}
		objs = append(objs, gate)
	}
	for i, o := range objs[:2*n] {
		ks, ok := o.(*kustomizev1.Kustomization)
		if !ok {
			continue
		}
		app := i / 2
		ks.Spec.SourceRef = kustomizev1.CrossNamespaceSourceReference{Kind: sourcev1.GitRepositoryKind, Name: ks.Name}
		ks.Status.Inventory = &kustomizev1.ResourceInventory{}
		for j := range 8 {
			ks.Status.Inventory.Entries = append(ks.Status.Inventory.Entries,
				kustomizev1.ResourceRef{ID: fmt.Sprintf("%s_%s-%d_apps_Deployment", ks.Namespace, ks.Name, j), Version: "v1"})
		}
		if app >= 50 && app%2 == 0 {
			ks.Spec.DependsOn = []meta.DependencyReference{{Name: fmt.Sprintf("app-%04d", app-50)}}
		}
		if app%10 == 0 {
			ks.Spec.Gates = []meta.NamespacedObjectReference{{Name: "freeze"}}
		}
	}
	return objs
}

// BenchmarkGraph1000 serves the graph of 1,000 applications, with their
// sources, dependencies, gates and inventories (the bound: 200
// ms): the first 300 are drawn.
func BenchmarkGraph1000(b *testing.B) {
	c := fake.NewClientBuilder().WithScheme(scheme.New()).WithObjects(graphApps(1000)...).Build()
	h := (&Server{Reader: c, Kinds: kinds.All, Log: logr.Discard()}).Handler()
	b.ResetTimer()
	for range b.N {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, localRequest(http.MethodGet, "/graph", nil))
		if rec.Code != http.StatusOK {
			b.Fatalf("GET /graph answered %d", rec.Code)
		}
	}
}

// BenchmarkTwentyOpenPages opens the overview of 1,000 applications in 20
// pages that follow it live (server-sent events), then changes an object:
// it reports how long the change takes to reach every page (the issue's
// bound: a second; the server gathers a burst for 200 ms first) and the
// heap the 20 open pages hold (the bound: 20 MiB). The pages read only
// the Reader, which in the controller is the informer cache.
func BenchmarkTwentyOpenPages(b *testing.B) {
	c := fake.NewClientBuilder().WithScheme(scheme.New()).WithObjects(apps(1000)...).Build()
	changes := &Changes{waiting: map[chan struct{}]bool{}}
	srv := httptest.NewServer((&Server{Reader: c, Kinds: kinds.All, Log: logr.Discard(), Changes: changes}).Handler())
	defer srv.Close()
	for range b.N {
		before := heapInUse()
		streams := openPages(b, srv.URL, 20)
		held := heapInUse() - before
		start := time.Now()
		changes.notify()
		for _, s := range streams {
			if !s.Scan() || !strings.HasPrefix(s.Text(), "event: changed") {
				b.Fatalf("a page was not told of the change: %v", s.Err())
			}
		}
		b.ReportMetric(float64(time.Since(start).Milliseconds()), "ms-to-20-pages")
		b.ReportMetric(float64(held)/(1<<20), "MiB-for-20-pages")
		for _, s := range streams {
			s.close()
		}
	}
}

// stream is the event stream of one open page.
type stream struct {
	*bufio.Scanner
	close func()
}

// openPages loads the overview n times and opens each page's stream, once
// the server has subscribed it.
func openPages(b *testing.B, url string, n int) []stream {
	out := make([]stream, 0, n)
	for range n {
		resp, err := http.Get(url + "/")
		if err != nil || resp.StatusCode != http.StatusOK {
			b.Fatalf("GET /: %v", err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		events, err := http.Get(url + "/events")
		if err != nil {
			b.Fatal(err)
		}
		s := bufio.NewScanner(events.Body)
		if !s.Scan() || s.Text() != ": live" { // subscribed
			b.Fatalf("no stream: %v", s.Err())
		}
		s.Scan() // the empty line after the comment
		out = append(out, stream{Scanner: s, close: func() { events.Body.Close() }})
	}
	return out
}

// heapInUse returns the bytes of the heap in use, after a collection.
func heapInUse() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse
}
