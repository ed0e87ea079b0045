package testenv

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ControllerManagerControllers are the kube-controller-manager controllers
// that StartControllerManager enables: the workload controllers that write
// the status of Deployments, ReplicaSets, StatefulSets, DaemonSets and Jobs,
// plus the namespace, garbage-collector and service-account controllers that
// a real cluster always runs. Controllers that need cluster keys, nodes or a
// cloud are left out.
var ControllerManagerControllers = []string{
	"deployment-controller",
	"replicaset-controller",
	"statefulset-controller",
	"daemonset-controller",
	"job-controller",
	"namespace-controller",
	"garbage-collector-controller",
	"serviceaccount-controller",
}

// ControllerManagerLogEnv names an environment variable: when set, it is the
// path of the file that kube-controller-manager's output is written to, and
// the file is kept after the tests. Otherwise the output goes to a
// temporary file that is removed when the process stops cleanly, and whose
// last lines are printed to stderr when the process fails.
const ControllerManagerLogEnv = "WINDLASS_KCM_LOG"

// controllerManagerStartTimeout bounds how long StartControllerManager
// waits for the deployment controller to act.
const controllerManagerStartTimeout = 90 * time.Second

var (
	kcmMu      sync.Mutex
	kcmStarted = map[*Environment]bool{}
)

// ControllerManager is a setup function for Run: it starts
// kube-controller-manager with StartControllerManager.
func ControllerManager(ctx context.Context, e *Environment) error {
	return e.StartControllerManager(ctx)
}

// StartControllerManager runs the kube-controller-manager binary from
// AssetsDir against the control plane, with the controllers listed in
// ControllerManagerControllers, so that Deployments and the other workloads
// get a status (no pod ever runs: there is no kubelet, so a Deployment is
// only Available when scaled to zero). It returns once the deployment
// controller has been seen acting on a probe Deployment, and stops the
// process when ctx ends. It may be called once per Environment.
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
	bin := filepath.Join(assets, "kube-controller-manager")
	if _, err := os.Stat(bin); err != nil {
		return fmt.Errorf("kube-controller-manager is not built in %s: run 'make controlplane' (or hack/controlplane.sh) first", assets)
	}

	dir, err := os.MkdirTemp("", "windlass-kcm-")
	if err != nil {
		return err
	}
	cleanupDir := true
	defer func() {
		if cleanupDir {
			_ = os.RemoveAll(dir)
		}
	}()

	kubeconfig, err := e.writeKubeconfig(dir, "kube-controller-manager")
	if err != nil {
		return err
	}

	logPath := filepath.Join(dir, "kube-controller-manager.log")
	keepLog := false
	if p := os.Getenv(ControllerManagerLogEnv); p != "" {
		logPath, keepLog = p, true
	}
	logFile, err := os.Create(logPath)
	if err != nil {
		return fmt.Errorf("creating the kube-controller-manager log: %w", err)
	}

	procCtx, stop := context.WithCancel(ctx)
	cmd := exec.CommandContext(procCtx, bin, controllerManagerArgs(kubeconfig)...)
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 10 * time.Second
	if err := cmd.Start(); err != nil {
		stop()
		_ = logFile.Close()
		return fmt.Errorf("starting kube-controller-manager: %w", err)
	}
	cleanupDir = false

	var failed atomic.Bool
	exited := make(chan struct{})
	go func() {
		defer close(exited)
		waitErr := cmd.Wait()
		_ = logFile.Close()
		_ = os.Remove(kubeconfig)
		unexpected := procCtx.Err() == nil
		if unexpected {
			fmt.Fprintf(os.Stderr, "kube-controller-manager exited unexpectedly (%v); log %s:\n%s\n",
				waitErr, logPath, logTail(logPath, 40))
		}
		if (unexpected || failed.Load()) && !keepLog {
			return // keep the log of a process that failed
		}
		_ = os.RemoveAll(dir)
	}()

	if err := e.waitForDeploymentController(ctx, exited); err != nil {
		failed.Store(true)
		stop()
		<-exited
		return fmt.Errorf("kube-controller-manager did not start: %w; log %s:\n%s", err, logPath, logTail(logPath, 40))
	}
	go func() {
		<-ctx.Done()
		stop()
	}()
	return nil
}

// controllerManagerArgs are the flags kube-controller-manager runs with.
func controllerManagerArgs(kubeconfig string) []string {
	return []string{
		"--kubeconfig=" + kubeconfig,
		"--controllers=" + strings.Join(ControllerManagerControllers, ","),
		"--leader-elect=false",
		"--use-service-account-credentials=false",
		// No serving endpoint: nothing scrapes it, and it would need a port.
		"--secure-port=0",
		"--concurrent-deployment-syncs=10",
		"--concurrent-replicaset-syncs=10",
		// A Deployment costs the controller manager about five requests
		// (its ReplicaSet and their statuses): at 100 requests per second,
		// a thousand Deployments would wait on its client-side limit, not
		// on the API server or on what is being tested.
		"--kube-api-qps=1000",
		"--kube-api-burst=2000",
		"-v=2",
	}
}

// waitForDeploymentController creates a Deployment scaled to zero in
// kube-system and waits until the deployment controller has observed it,
// then deletes it.
func (e *Environment) waitForDeploymentController(ctx context.Context, exited <-chan struct{}) error {
	ctx, cancel := context.WithTimeout(ctx, controllerManagerStartTimeout)
	defer cancel()
	probe := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "windlass-kcm-probe-", Namespace: metav1.NamespaceSystem},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](0),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "windlass-kcm-probe"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "windlass-kcm-probe"}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{
					Name:  "probe",
					Image: "windlass.invalid/probe:never",
				}}},
			},
		},
	}
	if err := e.Client.Create(ctx, probe); err != nil {
		return fmt.Errorf("creating the probe Deployment: %w", err)
	}
	defer func() {
		_ = e.Client.Delete(context.Background(), probe,
			client.PropagationPolicy(metav1.DeletePropagationBackground))
	}()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-exited:
			return errors.New("the process exited")
		case <-ctx.Done():
			return fmt.Errorf("waiting for the deployment controller: %w", ctx.Err())
		case <-tick.C:
		}
		var got appsv1.Deployment
		if err := e.Client.Get(ctx, client.ObjectKeyFromObject(probe), &got); err != nil {
			if apierrors.IsNotFound(err) || ctx.Err() != nil {
				continue
			}
			return fmt.Errorf("reading the probe Deployment: %w", err)
		}
		if got.Status.ObservedGeneration >= got.Generation {
			return nil
		}
	}
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
