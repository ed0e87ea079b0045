package kustomize

import (
	"net/http"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kustomizev1 "github.com/windlass-dev/windlass/api/kustomize/v1"
	"github.com/windlass-dev/windlass/api/meta"
	"github.com/windlass-dev/windlass/internal/conditions"
	"github.com/windlass-dev/windlass/internal/testutil"
	"github.com/windlass-dev/windlass/internal/testutil/testenv"
)

var (
	// env is the test control plane, with the source and kustomize
	// controllers of the real manager running against it (main_test.go).
	env *testenv.Environment
	// logs holds what the controllers logged.
	logs *testutil.Logs
)

const (
	timeout  = 60 * time.Second
	interval = 200 * time.Millisecond
)

// dryRuns counts the server-side dry runs that the Kustomization
// controller's local apply client sends, by namespace.
var dryRuns = &requestCounter{match: func(r *http.Request) bool { return r.URL.Query().Get("dryRun") != "" }}

// applies counts the server-side applies (not dry runs) that the
// Kustomization controller's local apply client sends, by namespace.
var applies = &requestCounter{match: func(r *http.Request) bool {
	return r.Method == http.MethodPatch && r.Header.Get("Content-Type") == "application/apply-patch+yaml" && r.URL.Query().Get("dryRun") == ""
}}

// reads counts the reads of one named object (GET, not a list or a watch)
// that the controllers send, by namespace.
var reads = &requestCounter{match: func(r *http.Request) bool {
	if r.Method != http.MethodGet || r.URL.Query().Has("watch") {
		return false
	}
	_, rest, ok := strings.Cut(r.URL.Path, "/namespaces/")
	return ok && strings.Count(rest, "/") == 2
}}

// requestCounter counts the requests that match, by the namespace in their
// path.
type requestCounter struct {
	match  func(*http.Request) bool
	mu     sync.Mutex
	counts map[string]int
	// paths counts by the path after /namespaces/ (NS/resource/name).
	paths map[string]int
}

func (c *requestCounter) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripperFunc(func(r *http.Request) (*http.Response, error) {
		if c.match(r) {
			if _, rest, ok := strings.Cut(r.URL.Path, "/namespaces/"); ok {
				ns, _, _ := strings.Cut(rest, "/")
				c.mu.Lock()
				if c.counts == nil {
					c.counts, c.paths = map[string]int{}, map[string]int{}
				}
				c.counts[ns]++
				c.paths[rest]++
				c.mu.Unlock()
			}
		}
		return rt.RoundTrip(r)
	})
}

// of returns the count of the objects of resource named names in ns.
func (c *requestCounter) of(ns, resource string, names ...string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, name := range names {
		n += c.paths[ns+"/"+resource+"/"+name]
	}
	return n
}

// in returns the count of namespace ns.
func (c *requestCounter) in(ns string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.counts[ns]
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// waitForKs returns the Kustomization once cond holds for it, with the
// status rules checked.
func waitForKs(g *WithT, key client.ObjectKey, cond func(*kustomizev1.Kustomization) bool) *kustomizev1.Kustomization {
	return testutil.WaitFor(g, env.Client, &kustomizev1.Kustomization{ObjectMeta: objectMeta(key.Namespace, key.Name)}, cond)
}

// ksReady is a waitForKs condition: Ready at the given revision (any when
// empty) for the current generation.
func ksReady(revision string) func(*kustomizev1.Kustomization) bool {
	return func(k *kustomizev1.Kustomization) bool {
		return conditions.IsTrue(k, meta.ReadyCondition) && k.Status.ObservedGeneration == k.Generation &&
			(revision == "" || k.Status.LastAppliedRevision == revision)
	}
}

// ksReason is a waitForKs condition on Ready's reason.
func ksReason(status, reason string) func(*kustomizev1.Kustomization) bool {
	return func(k *kustomizev1.Kustomization) bool {
		c := conditions.Get(k, meta.ReadyCondition)
		return c != nil && string(c.Status) == status && c.Reason == reason
	}
}

// objectMeta names an object.
func objectMeta(ns, name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Namespace: ns, Name: name}
}
