package testenv

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/windlass-dev/windlass/internal/controlplane"
)

// ControllerManagerLogEnv names an environment variable: when set, it is the
// path of the file that kube-controller-manager's output is written to, and
// the file is kept after the tests. Otherwise the output goes to a
// temporary file that is removed when the process stops cleanly, and whose
// last lines are printed to stderr when the process fails.
const ControllerManagerLogEnv = "WINDLASS_KCM_LOG"

var (
	kcmMu      sync.Mutex
	kcmStarted = map[*Environment]bool{}
)

// ControllerManager is a setup function for Run: it starts
// kube-controller-manager with StartControllerManager.
func ControllerManager(ctx context.Context, e *Environment) error {
	return e.StartControllerManager(ctx)
}

// StartControllerManager runs kube-controller-manager against the control
// plane (see controlplane.StartControllerManager: Deployments get a status,
// no pod ever runs). It returns once the deployment controller has been seen
// acting, and stops the process when ctx ends. It may be called once per
// Environment.
func (e *Environment) StartControllerManager(ctx context.Context) (err error) {
	kcmMu.Lock()
	if kcmStarted[e] {
		kcmMu.Unlock()
		return errors.New("kube-controller-manager is already running for this control plane")
	}
	kcmStarted[e] = true
	kcmMu.Unlock()
	defer func() {
		if err != nil {
			kcmMu.Lock()
			delete(kcmStarted, e)
			kcmMu.Unlock()
		}
	}()

	assets, err := AssetsDir()
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "windlass-kcm-")
	if err != nil {
		return err
	}
	kubeconfig, err := e.writeKubeconfig(dir, "kube-controller-manager")
	if err != nil {
		_ = os.RemoveAll(dir)
		return err
	}
	logPath := filepath.Join(dir, "kube-controller-manager.log")
	keepLog := false
	if p := os.Getenv(ControllerManagerLogEnv); p != "" {
		logPath, keepLog = p, true
	}
	logFile, err := os.Create(logPath)
	if err != nil {
		_ = os.RemoveAll(dir)
		return fmt.Errorf("creating the kube-controller-manager log: %w", err)
	}
	kcm, err := controlplane.StartControllerManager(ctx, controlplane.ControllerManagerOptions{
		Binary: filepath.Join(assets, "kube-controller-manager"), Kubeconfig: kubeconfig, Output: logFile, Client: e.Client,
	})
	if err != nil {
		_ = logFile.Close()
		return fmt.Errorf("%w; log %s:\n%s", err, logPath, logTail(logPath, 40))
	}
	go func() {
		<-kcm.Exited()
		_ = logFile.Close()
		_ = os.Remove(kubeconfig)
		if ctx.Err() == nil {
			fmt.Fprintf(os.Stderr, "kube-controller-manager exited unexpectedly (%v); log %s:\n%s\n",
				kcm.Err(), logPath, logTail(logPath, 40))
			return // keep the log of a process that failed
		}
		if !keepLog {
			_ = os.RemoveAll(dir)
		}
	}()
	return nil
}

// logTail returns the last n lines of the file at path.
func logTail(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Sprintf("(reading %s: %v)", path, err)
	}
	lines := bytes.Split(bytes.TrimRight(data, "\n"), []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return string(bytes.Join(lines, []byte("\n")))
}
