// Package testmanager starts the controller manager that `windlass
// controller` runs (internal/manager) against a test control plane, with
// options fit for tests: no metrics or health listeners, reserved loopback
// ports, a storage folder of its own, short retries and no jitter. Suites
// that start controllers use it rather than wiring reconcilers by hand, so
// that they test the wiring the binary runs.
//
// The controller packages cannot import it from their own tests (the
// manager imports them); their TestMain lives in an external test package
// (package foo_test) that runs a Suite.
package testmanager

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/client-go/rest"

	"github.com/windlass-dev/windlass/internal/manager"
	"github.com/windlass-dev/windlass/internal/testutil"
	"github.com/windlass-dev/windlass/internal/testutil/childproc"
	"github.com/windlass-dev/windlass/internal/testutil/testenv"
)

// Options returns the options of a manager running controllers (all of
// them when none are named): the binary's defaults, flags included, with
// these changes for tests:
//   - no metrics, health or leader election;
//   - the storage, Receiver and tags servers on reserved loopback ports,
//     and the storage in a new temporary folder;
//   - 4 objects of a kind at once, retries after 100 ms to 2 s, dependencies
//     waited for every second, and intervals without jitter;
//   - loopback addresses allowed, where the test servers listen.
func Options(controllers ...string) (manager.Options, error) {
	o := manager.DefaultOptions()
	manager.BindControllerFlags(pflag.NewFlagSet("test", pflag.ContinueOnError), &o)
	o.Controllers = controllers
	o.MetricsAddr, o.HealthAddr = "0", "0"
	o.Concurrent, o.Helm.Concurrent = 4, 4
	o.MinRetryDelay, o.MaxRetryDelay = 100*time.Millisecond, 2*time.Second
	o.RequeueDependency = time.Second
	o.IntervalJitterPercentage = 0
	o.AllowLoopback = true
	dir, err := os.MkdirTemp("", "windlass-storage-")
	if err != nil {
		return o, err
	}
	o.Source.StoragePath = dir
	addrs, err := childproc.FreeAddrs(3)
	if err != nil {
		return o, err
	}
	o.Source.StorageAddr, o.Source.StorageAdvAddr = addrs[0], addrs[0]
	o.Notification.ReceiverAddr = addrs[1]
	o.Image.TagsAddr = addrs[2]
	return o, nil
}

// Suite is the TestMain of a package whose tests run against controllers
// of the real manager.
type Suite struct {
	// Env receives the test control plane.
	Env **testenv.Environment
	// Logs, when set, receives what the controllers log.
	Logs **testutil.Logs
	// Controllers are the controllers to run.
	Controllers []string
	// KubeControllerManager runs a kube-controller-manager too (garbage
	// collection, Deployments' ReplicaSets), before the manager starts.
	KubeControllerManager bool
	// Options, when set, edits the options of Options(Controllers...).
	Options func(*manager.Options)
	// Wrap, when set, wraps the transport of the manager's API requests.
	Wrap func(http.RoundTripper) http.RoundTripper
	// Started, when set, is called with the manager once it runs.
	Started func(*manager.Manager, manager.Options) error
}

// Run starts the control plane and the manager, runs the tests and stops
// everything; it returns the exit code. The logs are captured first:
// controller-runtime drops for good the logs of a process that has set no
// logger 30 s after it started, which a control plane slow to start on a
// loaded machine would otherwise take.
func (s Suite) Run(m *testing.M) int {
	logs := testutil.CaptureLogs()
	if s.Logs != nil {
		*s.Logs = logs
	}
	if s.KubeControllerManager {
		return testenv.Run(m, s.Env, testenv.ControllerManager, s.start)
	}
	return testenv.Run(m, s.Env, s.start)
}

func (s Suite) start(ctx context.Context, e *testenv.Environment) error {
	opts, err := Options(s.Controllers...)
	if err != nil {
		return err
	}
	if s.Options != nil {
		s.Options(&opts)
	}
	cfg := rest.CopyConfig(e.Config)
	if s.Wrap != nil {
		cfg.Wrap(s.Wrap)
	}
	mgr, err := Start(ctx, cfg, opts)
	if err != nil {
		return err
	}
	if s.Started == nil {
		return nil
	}
	return s.Started(mgr, opts)
}

// Start builds the manager for cfg with opts and runs it until ctx ends.
func Start(ctx context.Context, cfg *rest.Config, opts manager.Options) (*manager.Manager, error) {
	m, err := manager.New(ctx, cfg, opts)
	if err != nil {
		return nil, err
	}
	go func() {
		if err := m.Start(ctx); err != nil {
			fmt.Fprintln(os.Stderr, "manager stopped:", err)
		}
	}()
	return m, nil
}
