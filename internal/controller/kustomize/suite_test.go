package kustomize

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	ctrlreconcile "sigs.k8s.io/controller-runtime/pkg/reconcile"

	kustomizev1 "github.com/windlass-dev/windlass/api/kustomize/v1"
	"github.com/windlass-dev/windlass/api/meta"
	"github.com/windlass-dev/windlass/internal/conditions"
	"github.com/windlass-dev/windlass/internal/controller/source"
	"github.com/windlass-dev/windlass/internal/event"
	"github.com/windlass-dev/windlass/internal/fetch"
	"github.com/windlass-dev/windlass/internal/impersonation"
	"github.com/windlass-dev/windlass/internal/reconcile"
	"github.com/windlass-dev/windlass/internal/testutil"
	"github.com/windlass-dev/windlass/internal/testutil/testenv"
)

var (
	env *testenv.Environment
	// logs holds what the controllers logged.
	logs *testutil.Logs
)

const (
	timeout  = 60 * time.Second
	interval = 200 * time.Millisecond
)

func TestMain(m *testing.M) {
	os.Exit(testenv.Run(m, &env, testenv.ControllerManager, startControllers))
}

// startControllers runs the GitRepository and Kustomization controllers in
// one manager, as `windlass controller` does, with artifacts handed over
// in process.
func startControllers(ctx context.Context, e *testenv.Environment) error {
	logs = testutil.CaptureLogs()
	storage, err := testutil.StartStorage()
	if err != nil {
		return err
	}

	mgr, err := ctrl.NewManager(e.Config, ctrl.Options{Scheme: e.Scheme, Metrics: metricsserver.Options{BindAddress: "0"}})
	if err != nil {
		return err
	}
	limiter := func() workqueue.TypedRateLimiter[ctrlreconcile.Request] {
		return workqueue.NewTypedItemExponentialFailureRateLimiter[ctrlreconcile.Request](100*time.Millisecond, 2*time.Second)
	}
	git := &source.GitRepositoryReconciler{
		Client: mgr.GetClient(), Events: &event.Recorder{Kubernetes: mgr.GetEventRecorder("source-controller")},
		Storage: storage, DependencyRequeue: time.Second, AllowInsecureHTTP: true,
	}
	if err := git.SetupWithManager(ctx, mgr, reconcile.ControllerOptions{MaxConcurrentReconciles: 4, RateLimiter: limiter()}); err != nil {
		return err
	}
	applyCfg := rest.CopyConfig(mgr.GetConfig())
	applyCfg.Wrap(dryRuns.wrap)
	applyHTTP, err := rest.HTTPClientFor(applyCfg)
	if err != nil {
		return err
	}
	ks := &KustomizationReconciler{
		Client:  mgr.GetClient(),
		Events:  &event.Recorder{Kubernetes: mgr.GetEventRecorder("kustomize-controller")},
		Fetcher: &fetch.Local{Storage: storage},
		Applier: &impersonation.Factory{
			Config: applyCfg, HTTPClient: applyHTTP, Scheme: mgr.GetScheme(), Mapper: mgr.GetRESTMapper(),
		},
		DependencyRequeue: time.Second,
	}
	if err := ks.SetupWithManager(ctx, mgr, reconcile.ControllerOptions{MaxConcurrentReconciles: 4, RateLimiter: limiter()}); err != nil {
		return err
	}
	go func() {
		if err := mgr.Start(ctx); err != nil {
			fmt.Fprintln(os.Stderr, "manager stopped:", err)
		}
	}()
	return nil
}

// dryRuns counts the server-side dry runs that the Kustomization
// controller's local apply client sends, by namespace.
var dryRuns = &requestCounter{match: func(r *http.Request) bool { return r.URL.Query().Get("dryRun") != "" }}

// requestCounter counts the requests that match, by the namespace in their
// path.
type requestCounter struct {
	match  func(*http.Request) bool
	mu     sync.Mutex
	counts map[string]int
}

func (c *requestCounter) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripperFunc(func(r *http.Request) (*http.Response, error) {
		if c.match(r) {
			if _, rest, ok := strings.Cut(r.URL.Path, "/namespaces/"); ok {
				ns, _, _ := strings.Cut(rest, "/")
				c.mu.Lock()
				if c.counts == nil {
					c.counts = map[string]int{}
				}
				c.counts[ns]++
				c.mu.Unlock()
			}
		}
		return rt.RoundTrip(r)
	})
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
