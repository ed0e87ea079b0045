package e2e

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/windlass-dev/windlass/internal/testenv"
	"github.com/windlass-dev/windlass/internal/testutil/childproc"
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

	ctrlProc, err = startController(kubeconfig, filepath.Join(tmp, "storage"))
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	if err := ctrlProc.waitReady(timeout); err != nil {
		ctrlProc.kill()
		fmt.Fprintf(os.Stderr, "e2e: %v\nwindlass controller output:\n%s", err, ctrlProc.output())
		return 1
	}

	code := m.Run()

	// The controller must stop cleanly on SIGTERM, as it does when a pod is
	// deleted.
	start := time.Now()
	if err := ctrlProc.terminate(shutdownGrace); err != nil {
		fmt.Fprintf(os.Stdout, "--- FAIL: windlass controller shutdown on SIGTERM: %v\nwindlass controller output:\n%s", err, ctrlProc.output())
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
	cmd *exec.Cmd
	out *childproc.Buffer
	// done is closed once the process has exited; waitErr is then its
	// exit error.
	done    chan struct{}
	waitErr error

	// HealthAddr, MetricsAddr and StorageAddr are host:port addresses the
	// controller serves on.
	HealthAddr, MetricsAddr, StorageAddr string
}

// startController starts `windlass controller` against the cluster of
// kubeconfig, with its storage in storagePath and every server on a free
// loopback port.
func startController(kubeconfig, storagePath string) (*controller, error) {
	ports, err := childproc.FreeAddrs(3)
	if err != nil {
		return nil, err
	}
	c := &controller{
		out:         &childproc.Buffer{},
		done:        make(chan struct{}),
		StorageAddr: ports[0],
		MetricsAddr: ports[1],
		HealthAddr:  ports[2],
	}
	c.cmd = windlassCommand(context.Background(),
		"controller",
		"--kubeconfig", kubeconfig,
		"--storage-path", storagePath,
		"--storage-addr", c.StorageAddr,
		"--metrics-addr", c.MetricsAddr,
		"--health-addr", c.HealthAddr,
		"--log-encoding", "console",
	)
	c.cmd.Stdout = c.out
	c.cmd.Stderr = c.out
	if err := c.cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting windlass controller: %w", err)
	}
	go func() {
		c.waitErr = c.cmd.Wait()
		close(c.done)
	}()
	return c, nil
}

// windlassCommand returns a command that runs the built binary with args,
// in an environment that points at no cluster of its own (no KUBECONFIG,
// no in-cluster variables), so that only the flags decide.
func windlassCommand(ctx context.Context, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, windlassBin, args...)
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		switch name {
		case "KUBECONFIG", "KUBERNETES_SERVICE_HOST", "KUBERNETES_SERVICE_PORT", "RUNTIME_NAMESPACE":
			continue
		}
		cmd.Env = append(cmd.Env, kv)
	}
	cmd.SysProcAttr = childproc.SysProcAttr()
	return cmd
}

// waitReady waits until GET /readyz on the health address answers 200.
func (c *controller) waitReady(d time.Duration) error {
	client := &http.Client{Timeout: 2 * time.Second}
	url := "http://" + c.HealthAddr + "/readyz"
	deadline := time.Now().Add(d)
	var last string
	for {
		select {
		case <-c.done:
			return fmt.Errorf("windlass controller exited before it was ready: %v", c.waitErr)
		default:
		}
		resp, err := client.Get(url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			last = resp.Status
		} else {
			last = err.Error()
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("windlass controller not ready after %s: GET %s: %s", d, url, last)
		}
		time.Sleep(interval)
	}
}

// terminate sends SIGTERM and waits up to grace for the process to exit;
// it reports an error unless the process exited with status 0 in time. The
// process is killed if it is still running after grace.
func (c *controller) terminate(grace time.Duration) error {
	select {
	case <-c.done:
		return fmt.Errorf("windlass controller had already exited: %v", c.waitErr)
	default:
	}
	if err := c.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		return fmt.Errorf("sending SIGTERM: %w", err)
	}
	select {
	case <-c.done:
		if c.waitErr != nil {
			return fmt.Errorf("windlass controller exited with %v after SIGTERM", c.waitErr)
		}
		return nil
	case <-time.After(grace):
		c.kill()
		return fmt.Errorf("windlass controller still running %s after SIGTERM; killed it", grace)
	}
}

// kill kills the process and waits for it to exit.
func (c *controller) kill() {
	_ = c.cmd.Process.Kill()
	<-c.done
}

// exited reports whether the process has exited.
func (c *controller) exited() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

// output returns what the process has written to stdout and stderr.
func (c *controller) output() string { return c.out.String() }

// logControllerOnFailure shows the controller's output when t fails, and
// fails t if the controller has died meanwhile.
func logControllerOnFailure(t *testing.T) {
	t.Helper()
	t.Cleanup(func() {
		if ctrlProc.exited() {
			t.Errorf("windlass controller exited during the test: %v", ctrlProc.waitErr)
		}
		if t.Failed() {
			t.Logf("windlass controller output:\n%s", ctrlProc.output())
		}
	})
}
