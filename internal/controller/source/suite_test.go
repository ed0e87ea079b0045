package source

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	ctrlreconcile "sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/windlass-dev/windlass/api/meta"
	sourcev1 "github.com/windlass-dev/windlass/api/source/v1"
	"github.com/windlass-dev/windlass/internal/artifact"
	"github.com/windlass-dev/windlass/internal/conditions"
	"github.com/windlass-dev/windlass/internal/event"
	"github.com/windlass-dev/windlass/internal/reconcile"
	"github.com/windlass-dev/windlass/internal/testutil"
	"github.com/windlass-dev/windlass/internal/testutil/testenv"
)

var (
	env     *testenv.Environment
	storage *artifact.Storage
	// k8s is the manager's cached client, as the controller sees the world.
	k8s client.Client
	// logs holds what the controller logged.
	logs *testutil.Logs
)

// maxCloneSize bounds the clones of the tests' controller, far above what
// the tests' repositories hold but one test's.
const maxCloneSize = 4 << 20

// maxFetchSize bounds the OCI layers and buckets of the tests' controller.
const maxFetchSize = 1 << 20

const (
	timeout  = 30 * time.Second
	interval = 100 * time.Millisecond
)

func TestMain(m *testing.M) {
	os.Exit(testenv.Run(m, &env, startController))
}

// startController runs the GitRepository controller against the test
// control plane, with storage served on a loopback port.
func startController(ctx context.Context, e *testenv.Environment) error {
	logs = testutil.CaptureLogs()
	var err error
	if storage, err = testutil.StartStorage(); err != nil {
		return err
	}
	mgr, err := ctrl.NewManager(e.Config, ctrl.Options{
		Scheme:  e.Scheme,
		Metrics: metricsserver.Options{BindAddress: "0"},
	})
	if err != nil {
		return err
	}
	r := &GitRepositoryReconciler{
		Client:            mgr.GetClient(),
		Events:            &event.Recorder{Kubernetes: mgr.GetEventRecorder("source-controller")},
		Storage:           storage,
		DependencyRequeue: time.Second,
		MaxCloneSize:      maxCloneSize,
		AllowInsecureHTTP: true,
	}
	opts := reconcile.ControllerOptions{
		MaxConcurrentReconciles: 4,
		RateLimiter:             workqueue.NewTypedItemExponentialFailureRateLimiter[ctrlreconcile.Request](100*time.Millisecond, 2*time.Second),
	}
	if err := r.SetupWithManager(ctx, mgr, opts); err != nil {
		return err
	}
	ociRepos := &OCIRepositoryReconciler{
		Client:            mgr.GetClient(),
		Events:            &event.Recorder{Kubernetes: mgr.GetEventRecorder("source-controller")},
		Storage:           storage,
		MaxLayerSize:      maxFetchSize,
		AllowInsecureHTTP: true,
	}
	if err := ociRepos.SetupWithManager(ctx, mgr, opts); err != nil {
		return err
	}
	buckets := &BucketReconciler{
		Client:            mgr.GetClient(),
		Events:            &event.Recorder{Kubernetes: mgr.GetEventRecorder("source-controller")},
		Storage:           storage,
		MaxSize:           maxFetchSize,
		AllowInsecureHTTP: true,
	}
	if err := buckets.SetupWithManager(ctx, mgr, opts); err != nil {
		return err
	}
	if err := startHelmControllers(ctx, mgr, opts); err != nil {
		return err
	}
	k8s = mgr.GetClient()
	go func() {
		if err := mgr.Start(ctx); err != nil {
			fmt.Fprintln(os.Stderr, "manager stopped:", err)
		}
	}()
	return nil
}

// newGitRepository returns a GitRepository for url with a short interval.
func newGitRepository(ns, name, url string) *sourcev1.GitRepository {
	return &sourcev1.GitRepository{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: sourcev1.GitRepositorySpec{
			URL:      url,
			Interval: metav1.Duration{Duration: 10 * time.Minute},
		},
	}
}

// waitFor returns the object once cond holds for it, with the status
// rules checked.
func waitFor(g *WithT, obj *sourcev1.GitRepository, cond func(*sourcev1.GitRepository) bool) *sourcev1.GitRepository {
	return testutil.WaitFor(g, env.Client, obj, cond, gitRepositoryNegativeConditions...)
}

// readyAt is a waitFor condition: Ready=True for the current generation.
func readyAt(revision string) func(*sourcev1.GitRepository) bool {
	return func(o *sourcev1.GitRepository) bool {
		return conditions.IsTrue(o, meta.ReadyCondition) &&
			o.Status.ObservedGeneration == o.Generation &&
			o.Status.Artifact != nil && (revision == "" || o.Status.Artifact.Revision == revision)
	}
}

// hasCondition is a waitFor condition on one condition's status and reason.
func hasCondition(conditionType string, status metav1.ConditionStatus, reason string) func(*sourcev1.GitRepository) bool {
	return func(o *sourcev1.GitRepository) bool {
		c := conditions.Get(o, conditionType)
		return c != nil && c.Status == status && c.Reason == reason
	}
}
