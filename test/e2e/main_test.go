package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-logr/logr"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/windlass-dev/windlass/internal/testutil/childproc"
	"github.com/windlass-dev/windlass/internal/testutil/testenv"
)

const (
	// timeout bounds every wait for the controller or the API server.
	timeout = 60 * time.Second
	// interval is the polling period of those waits.
	interval = 250 * time.Millisecond
	// shutdownGrace is how long the controller may take to exit on SIGTERM.
	shutdownGrace = 30 * time.Second
)

var (
	// env is the test control plane.
	env *testenv.Environment
	// windlassBin is the windlass binary built for this run.
	windlassBin string
	// kubeconfig is the path of a kubeconfig for env, as a user would have.
	kubeconfig string
	// ctrlProc is the `windlass controller` process the tests run against.
	ctrlProc *controller
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

// run is the body of TestMain; it returns the exit code of the test binary.
func run(m *testing.M) int {
	// The test process's own controller-runtime clients (envtest's, the
	// tests') log nothing worth reading; the controller's output is its
	// own. Without a logger, controller-runtime prints a stack instead.
	ctrl.SetLogger(logr.Discard())
	tmp, err := os.MkdirTemp("", "windlass-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	defer os.RemoveAll(tmp)

	// Build the binary while the control plane starts.
	windlassBin = filepath.Join(tmp, "windlass")
	built := make(chan error, 1)
	go func() { built <- buildWindlass(windlassBin) }()

	env, err = testenv.Start()
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		<-built
		return 1
	}
	defer func() {
		if err := env.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "e2e: stopping the test control plane:", err)
		}
	}()
	if err := <-built; err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	kubeconfig, err = env.KubeconfigFile(tmp)
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}

	ctrlProc, err = startController(kubeconfig, filepath.Join(tmp, "storage"), "!"+shardLabel)
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	if err := ctrlProc.waitReady(timeout); err != nil {
		ctrlProc.Kill()
		fmt.Fprintf(os.Stderr, "e2e: %v\nwindlass controller output:\n%s", err, ctrlProc.Output())
		return 1
	}

	code := m.Run()

	// The controller must stop cleanly on SIGTERM, as it does when a pod is
	// deleted.
	start := time.Now()
	if err := ctrlProc.Terminate(shutdownGrace); err != nil {
		fmt.Fprintf(os.Stdout, "--- FAIL: windlass controller shutdown on SIGTERM: %v\nwindlass controller output:\n%s", err, ctrlProc.Output())
		return 1
	}
	fmt.Fprintf(os.Stdout, "e2e: windlass controller exited with status 0 %.2fs after SIGTERM\n", time.Since(start).Seconds())
	return code
}

// buildWindlass builds ./cmd/windlass into bin.
func buildWindlass(bin string) error {
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/windlass")
	cmd.Dir = testenv.RepoRoot()
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("building windlass: %w\n%s", err, out)
	}
	return nil
}

// controller is a running `windlass controller` process.
type controller struct {
	*childproc.Process

	// HealthAddr, MetricsAddr, StorageAddr, ReceiverAddr and TagsAddr are
	// host:port addresses the controller serves on.
	HealthAddr, MetricsAddr, StorageAddr, ReceiverAddr, TagsAddr string
	// StoragePath is the folder of its artifacts.
	StoragePath string
}

// shardLabel is the sharding label: the shared controller leaves alone the
// objects that carry it, so that a test can run a controller of its own
// for them (--watch-label-selector).
const shardLabel = "sharding.fluxcd.io/key"

// startController starts `windlass controller` against the cluster of
// kubeconfig, with its storage in storagePath, every server on a free
// loopback port, and reconciling the objects that match selector; extra
// flags are appended.
func startController(kubeconfig, storagePath, selector string, extra ...string) (*controller, error) {
	return startControllerWithEnv(kubeconfig, storagePath, selector, nil, extra...)
}

// startControllerWithEnv is startController with env added to the
// controller's environment.
func startControllerWithEnv(kubeconfig, storagePath, selector string, env []string, extra ...string) (*controller, error) {
	return startControllerWith(kubeconfig, storagePath, selector, env, nil, extra...)
}

// startControllerWith is startControllerWithEnv whose command wrap (when
// not nil) changes before it starts.
func startControllerWith(kubeconfig, storagePath, selector string, env []string, wrap func(*exec.Cmd), extra ...string) (*controller, error) {
	ports, err := childproc.FreeAddrs(5)
	if err != nil {
		return nil, err
	}
	c := &controller{StorageAddr: ports[0], MetricsAddr: ports[1], HealthAddr: ports[2], ReceiverAddr: ports[3], TagsAddr: ports[4],
		StoragePath: storagePath}
	args := []string{"controller",
		"--kubeconfig", kubeconfig,
		"--storage-path", storagePath,
		"--storage-addr", c.StorageAddr,
		"--metrics-addr", c.MetricsAddr,
		"--health-addr", c.HealthAddr,
		"--receiver-addr", c.ReceiverAddr,
		"--image-tags-addr", c.TagsAddr,
		"--watch-label-selector", selector,
		"--log-encoding", "console",
		"--allow-loopback-addresses", // the test servers listen on loopback
	}
	cmd := windlassCommand(context.Background(), append(args, extra...)...)
	cmd.Env = append(cmd.Env, env...)
	if wrap != nil {
		wrap(cmd)
	}
	c.Process, err = childproc.Start(cmd)
	return c, err
}

// windlassCommand returns a command that runs the built binary with args,
// in an environment that points at no cluster of its own (no KUBECONFIG,
// no in-cluster variables), so that only the flags decide.
func windlassCommand(ctx context.Context, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, windlassBin, args...)
	cmd.Env = childproc.CleanEnv()
	cmd.SysProcAttr = childproc.SysProcAttr()
	return cmd
}

// waitReady waits until GET /readyz on the health address answers 200.
func (c *controller) waitReady(d time.Duration) error {
	return c.WaitHTTP(context.Background(), "http://"+c.HealthAddr+"/readyz", d)
}

// logControllerOnFailure shows the controller's output when t fails, and
// fails t if the controller has died meanwhile.
func logControllerOnFailure(t *testing.T) {
	t.Helper()
	t.Cleanup(func() {
		if ctrlProc.Exited() {
			t.Errorf("windlass controller exited during the test: %v", ctrlProc.Err())
		}
		if t.Failed() {
			t.Logf("windlass controller output:\n%s", ctrlProc.Output())
		}
	})
}
