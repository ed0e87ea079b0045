package helm

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

	helmv2 "github.com/windlass-dev/windlass/api/helm/v2"
	"github.com/windlass-dev/windlass/api/meta"
	"github.com/windlass-dev/windlass/internal/conditions"
	"github.com/windlass-dev/windlass/internal/controller/source"
	"github.com/windlass-dev/windlass/internal/event"
	"github.com/windlass-dev/windlass/internal/fetch"
	"github.com/windlass-dev/windlass/internal/helm/repository"
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

func TestMain(m *testing.M) {
	os.Exit(testenv.Run(m, &env, testenv.ControllerManager, startControllers))
}

// startControllers runs the HelmRepository, HelmChart, OCIRepository and
// HelmRelease controllers in one manager, as `windlass controller` does,
// with charts handed over in process.
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
	opts := func() reconcile.ControllerOptions {
		return reconcile.ControllerOptions{MaxConcurrentReconciles: 4, RateLimiter: workqueue.NewTypedItemExponentialFailureRateLimiter[ctrlreconcile.Request](100*time.Millisecond, 2*time.Second)}
	}
	sourceEvents := &event.Recorder{Kubernetes: mgr.GetEventRecorder("source-controller")}
	cache := repository.NewIndexCache(16, time.Minute)
	repo := &source.HelmRepositoryReconciler{Client: mgr.GetClient(), Events: sourceEvents, Storage: storage, IndexCache: cache, AllowInsecureHTTP: true}
	if err := repo.SetupWithManager(ctx, mgr, opts()); err != nil {
		return err
	}
	chart := &source.HelmChartReconciler{Client: mgr.GetClient(), Events: sourceEvents, Storage: storage, IndexCache: cache,
		AllowInsecureHTTP: true, DependencyRequeue: time.Second}
	if err := chart.SetupWithManager(ctx, mgr, opts()); err != nil {
		return err
	}
	oci := &source.OCIRepositoryReconciler{Client: mgr.GetClient(), Events: sourceEvents, Storage: storage, AllowInsecureHTTP: true}
	if err := oci.SetupWithManager(ctx, mgr, opts()); err != nil {
		return err
	}
	hr := &HelmReleaseReconciler{
		Client:      mgr.GetClient(),
		Events:      &event.Recorder{Kubernetes: mgr.GetEventRecorder("helm-controller")},
		ChartReader: &fetch.Local{Storage: storage},
		Targets: &impersonation.Factory{
			Config: mgr.GetConfig(), HTTPClient: mgr.GetHTTPClient(), Scheme: mgr.GetScheme(), Mapper: mgr.GetRESTMapper(),
		},
		DependencyRequeue: time.Second,
	}
	if err := hr.SetupWithManager(ctx, mgr, opts()); err != nil {
		return err
	}
	go func() {
		if err := mgr.Start(ctx); err != nil {
			fmt.Fprintln(os.Stderr, "manager stopped:", err)
		}
	}()
	return nil
}

// waitForHR returns the HelmRelease once cond holds for it, with the status
// rules checked.
func waitForHR(g *WithT, key client.ObjectKey, cond func(*helmv2.HelmRelease) bool) *helmv2.HelmRelease {
	return testutil.WaitFor(g, env.Client, &helmv2.HelmRelease{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}, cond)
}

// hrReady is a waitForHR condition: Ready for the current generation, with
// the latest release at chart version (any when empty).
func hrReady(version string) func(*helmv2.HelmRelease) bool {
	return func(hr *helmv2.HelmRelease) bool {
		latest := hr.Status.History.Latest()
		return conditions.IsTrue(hr, meta.ReadyCondition) && hr.Status.ObservedGeneration == hr.Generation &&
			latest != nil && (version == "" || latest.ChartVersion == version)
	}
}

// hrReason is a waitForHR condition on the reason of a condition.
func hrReason(conditionType, status, reason string) func(*helmv2.HelmRelease) bool {
	return func(hr *helmv2.HelmRelease) bool {
		c := conditions.Get(hr, conditionType)
		return c != nil && string(c.Status) == status && c.Reason == reason
	}
}
