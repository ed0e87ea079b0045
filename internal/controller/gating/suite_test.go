package gating

import (
	"context"
	"os"
	"testing"
	"time"

	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	ctrlreconcile "sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/windlass-dev/windlass/internal/event"
	"github.com/windlass-dev/windlass/internal/reconcile"
	"github.com/windlass-dev/windlass/internal/testutil"
	"github.com/windlass-dev/windlass/internal/testutil/testenv"
)

var env *testenv.Environment

func TestMain(m *testing.M) {
	os.Exit(testenv.Run(m, &env, startController))
}

// startController runs the Gate controller against the test control plane.
func startController(ctx context.Context, e *testenv.Environment) error {
	testutil.CaptureLogs()
	mgr, err := ctrl.NewManager(e.Config, ctrl.Options{Scheme: e.Scheme, Metrics: metricsserver.Options{BindAddress: "0"}})
	if err != nil {
		return err
	}
	r := &GateReconciler{Client: mgr.GetClient(), Events: &event.Recorder{Kubernetes: mgr.GetEventRecorder("gating-controller")}}
	err = r.SetupWithManager(ctx, mgr, reconcile.ControllerOptions{
		MaxConcurrentReconciles: 4,
		RateLimiter:             workqueue.NewTypedItemExponentialFailureRateLimiter[ctrlreconcile.Request](100*time.Millisecond, 2*time.Second),
	})
	if err != nil {
		return err
	}
	go func() { _ = mgr.Start(ctx) }()
	return nil
}
