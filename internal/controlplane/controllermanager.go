package controlplane

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strings"
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

// controllerManagerStartTimeout bounds how long StartControllerManager
// waits for the deployment controller to act.
const controllerManagerStartTimeout = 90 * time.Second

// ControllerManagerOptions say how to run kube-controller-manager.
type ControllerManagerOptions struct {
	// Binary is the path of the kube-controller-manager program.
	Binary string
	// Kubeconfig is the path of its kubeconfig (a system:masters user).
	Kubeconfig string
	// Output receives its standard output and error.
	Output io.Writer
	// Client reaches the API server, to check that it started.
	Client client.Client
}

// ControllerManager is a running kube-controller-manager.
type ControllerManager struct {
	exited chan struct{}
	err    error
	stop   context.CancelFunc
}

// StartControllerManager runs kube-controller-manager with the controllers
// listed in ControllerManagerControllers, so that Deployments and the other
// workloads get a status (no pod ever runs: there is no kubelet, so a
// Deployment is only Available when scaled to zero). It returns once the
// deployment controller has been seen acting on a probe Deployment. The
// process gets SIGTERM when ctx ends or Stop is called.
func StartControllerManager(ctx context.Context, opts ControllerManagerOptions) (*ControllerManager, error) {
	procCtx, stop := context.WithCancel(ctx)
	cmd := exec.CommandContext(procCtx, opts.Binary, controllerManagerArgs(opts.Kubeconfig)...)
	cmd.Stdout, cmd.Stderr = opts.Output, opts.Output
	cmd.SysProcAttr = sysProcAttr()
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 10 * time.Second
	if err := cmd.Start(); err != nil {
		stop()
		return nil, fmt.Errorf("starting kube-controller-manager: %w", err)
	}
	m := &ControllerManager{exited: make(chan struct{}), stop: stop}
	go func() {
		defer close(m.exited)
		m.err = cmd.Wait()
	}()
	if err := waitForDeploymentController(ctx, opts.Client, m.exited); err != nil {
		m.Stop()
		return nil, fmt.Errorf("kube-controller-manager did not start: %w", err)
	}
	return m, nil
}

// Exited is closed when the process has exited.
func (m *ControllerManager) Exited() <-chan struct{} { return m.exited }

// Err is how the process exited, once Exited is closed.
func (m *ControllerManager) Err() error { return m.err }

// Stop sends SIGTERM and waits for the process to exit.
func (m *ControllerManager) Stop() {
	m.stop()
	<-m.exited
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
func waitForDeploymentController(ctx context.Context, c client.Client, exited <-chan struct{}) error {
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
	if err := c.Create(ctx, probe); err != nil {
		return fmt.Errorf("creating the probe Deployment: %w", err)
	}
	defer func() {
		_ = c.Delete(context.Background(), probe, client.PropagationPolicy(metav1.DeletePropagationBackground))
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
		if err := c.Get(ctx, client.ObjectKeyFromObject(probe), &got); err != nil {
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
