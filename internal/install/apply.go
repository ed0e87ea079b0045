package install

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/windlass-dev/windlass/internal/monitoring"
	"github.com/windlass-dev/windlass/internal/ssa"
)

// PollInterval is how often the waits of this package look again.
const PollInterval = 500 * time.Millisecond

// owner is the ssa owner of an installation in namespace: its labels are
// NameLabel and NamespaceLabel, which Render puts on every object too.
func owner(namespace string) ssa.Owner {
	return ssa.Owner{Group: ownerGroup, Name: "windlass", Namespace: namespace}
}

// Apply applies the manifests with server-side apply as the field manager
// "windlass", taking over conflicting fields: CRDs, the Namespace and the
// cluster-scoped RBAC first, waited for (CRDs Established) within
// stageTimeout, then the rest. Every object is checked with a dry run
// before anything is written. Applying the same manifests again writes
// nothing and reports every object unchanged.
func Apply(ctx context.Context, c client.Client, m *Manifests, stageTimeout time.Duration) (*ssa.ChangeSet, error) {
	objs, err := m.Objects()
	if err != nil {
		return nil, err
	}
	mgr, err := ssa.New(c, c.RESTMapper(), ssa.Options{FieldManager: FieldManager, Owner: owner(m.Options.Namespace), PollInterval: PollInterval})
	if err != nil {
		return nil, err
	}
	cs, err := mgr.ApplyAllStaged(ctx, objs, ssa.ApplyOptions{WaitTimeout: stageTimeout})
	if err != nil {
		return cs, fmt.Errorf("applying the manifests: %w", err)
	}
	return cs, nil
}

// NotAvailableError says which Deployments did not become Available in
// time, and why.
type NotAvailableError struct {
	// Namespace holds the Deployments.
	Namespace string
	// Reasons maps each Deployment that is not Available to why.
	Reasons map[string]string
	// Timeout is how long the wait lasted.
	Timeout time.Duration
}

// Error names each Deployment and why it is not Available, and how to look
// further.
func (e *NotAvailableError) Error() string {
	names := make([]string, 0, len(e.Reasons))
	for name := range e.Reasons {
		names = append(names, name)
	}
	sort.Strings(names)
	parts := make([]string, 0, len(names))
	for _, name := range names {
		parts = append(parts, fmt.Sprintf("Deployment %s/%s is not Available: %s", e.Namespace, name, e.Reasons[name]))
	}
	return fmt.Sprintf("after %s, %s (see kubectl -n %s describe deployment %s)",
		e.Timeout, strings.Join(parts, "; "), e.Namespace, strings.Join(names, " "))
}

// WaitAvailable waits until every Deployment named in namespace is
// Available with its current generation rolled out, and returns a
// *NotAvailableError naming the others when ctx ends first. Each
// Deployment that becomes Available is passed to ready.
func WaitAvailable(ctx context.Context, c client.Client, namespace string, names []string, timeout time.Duration, ready func(name string)) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	pending := map[string]string{}
	for _, name := range names {
		pending[name] = "not read yet"
	}
	err := wait.PollUntilContextCancel(ctx, PollInterval, true, func(ctx context.Context) (bool, error) {
		for _, name := range sortedKeys(pending) {
			ok, why := DeploymentAvailable(ctx, c, namespace, name)
			if !ok {
				pending[name] = why
				continue
			}
			delete(pending, name)
			if ready != nil {
				ready(name)
			}
		}
		return len(pending) == 0, nil
	})
	if err == nil {
		return nil
	}
	// The last look may have been cut short by the deadline: look once
	// more, to say why.
	final, cancelFinal := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancelFinal()
	for _, name := range sortedKeys(pending) {
		if ok, why := DeploymentAvailable(final, c, namespace, name); !ok {
			pending[name] = why
		}
	}
	return &NotAvailableError{Namespace: namespace, Reasons: pending, Timeout: timeout}
}

// DeploymentAvailable reads the Deployment namespace/name and reports
// whether it is Available with its current generation rolled out, and
// otherwise why not, with what its pods wait for.
func DeploymentAvailable(ctx context.Context, c client.Client, namespace, name string) (bool, string) {
	d := &appsv1.Deployment{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, d); err != nil {
		if apierrors.IsNotFound(err) {
			return false, "it does not exist"
		}
		return false, "reading it: " + err.Error()
	}
	ok, why := deploymentStatus(d)
	if ok {
		return true, ""
	}
	if pods := podsWaiting(ctx, c, d); pods != "" {
		why += "; " + pods
	}
	return false, why
}

// deploymentStatus reports whether d is Available and rolled out, from its
// status alone.
func deploymentStatus(d *appsv1.Deployment) (bool, string) {
	if d.Status.ObservedGeneration < d.Generation {
		return false, fmt.Sprintf("the deployment controller has not handled generation %d yet (is kube-controller-manager running?)", d.Generation)
	}
	want := int32(1)
	if d.Spec.Replicas != nil {
		want = *d.Spec.Replicas
	}
	var available *appsv1.DeploymentCondition
	for i := range d.Status.Conditions {
		if d.Status.Conditions[i].Type == appsv1.DeploymentAvailable {
			available = &d.Status.Conditions[i]
		}
	}
	switch {
	case available == nil:
		return false, "no Available condition yet"
	case available.Status != corev1.ConditionTrue:
		return false, fmt.Sprintf("%s, %d/%d replicas available (%s)", available.Reason, d.Status.AvailableReplicas, want, available.Message)
	case d.Status.UpdatedReplicas < want:
		return false, fmt.Sprintf("rolling out, %d/%d replicas updated", d.Status.UpdatedReplicas, want)
	}
	return true, ""
}

// podsWaiting describes what the pods of d wait for: a container's waiting
// reason (ImagePullBackOff, CrashLoopBackOff...) or a condition that is not
// met (Unschedulable), or that there are none.
func podsWaiting(ctx context.Context, c client.Client, d *appsv1.Deployment) string {
	if d.Spec.Selector == nil {
		return ""
	}
	pods := &corev1.PodList{}
	if err := c.List(ctx, pods, client.InNamespace(d.Namespace), client.MatchingLabels(d.Spec.Selector.MatchLabels)); err != nil {
		return ""
	}
	if len(pods.Items) == 0 {
		return "no pods"
	}
	var out []string
	for i := range pods.Items {
		if why := podWaiting(&pods.Items[i]); why != "" {
			out = append(out, fmt.Sprintf("pod %s: %s", pods.Items[i].Name, why))
		}
	}
	sort.Strings(out)
	return strings.Join(out, "; ")
}

// podWaiting says why pod is not ready, or "" when it is.
func podWaiting(pod *corev1.Pod) string {
	for _, cs := range append(pod.Status.InitContainerStatuses, pod.Status.ContainerStatuses...) {
		if w := cs.State.Waiting; w != nil && w.Reason != "" && w.Reason != "PodInitializing" && w.Reason != "ContainerCreating" {
			return strings.TrimSpace(w.Reason + " " + firstLine(w.Message))
		}
		if t := cs.LastTerminationState.Terminated; t != nil && !cs.Ready {
			return fmt.Sprintf("container %s exited with %d (%s)", cs.Name, t.ExitCode, t.Reason)
		}
	}
	for _, cond := range pod.Status.Conditions {
		if cond.Status == corev1.ConditionFalse && cond.Reason != "" {
			return strings.TrimSpace(fmt.Sprintf("%s %s: %s", cond.Type, cond.Reason, firstLine(cond.Message)))
		}
	}
	if pod.Status.Phase == corev1.PodPending {
		return "Pending, not scheduled yet"
	}
	return ""
}

// firstLine returns the first line of s.
func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// sortedKeys returns the keys of m in order.
func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// RequireMonitoringAPI returns an error that says what to do when the
// cluster does not serve the Prometheus Operator's kinds that --monitoring
// applies.
func RequireMonitoringAPI(mapper meta.RESTMapper) error {
	gv, err := schema.ParseGroupVersion(monitoring.OperatorAPIVersion)
	if err != nil {
		return err
	}
	for _, kind := range []string{monitoring.PodMonitorKind, monitoring.PrometheusRuleKind} {
		if _, err := mapper.RESTMapping(gv.WithKind(kind).GroupKind(), gv.Version); err != nil {
			if meta.IsNoMatchError(err) {
				return fmt.Errorf("--monitoring needs the Prometheus Operator's %s kind (%s), which this cluster does not serve: "+
					"install the operator (or its CRDs) first, or leave --monitoring out and give Prometheus and Grafana "+
					"the output of windlass monitoring rules, dashboard and scrape-config", kind, monitoring.OperatorAPIVersion)
			}
			return fmt.Errorf("looking up the %s kind: %w", kind, err)
		}
	}
	return nil
}
