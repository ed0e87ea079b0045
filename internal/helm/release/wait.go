package release

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"helm.sh/helm/v4/pkg/action"
	"helm.sh/helm/v4/pkg/kube"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/windlass-dev/windlass/internal/health"
	"github.com/windlass-dev/windlass/internal/inventory"
	objversions "github.com/windlass-dev/windlass/internal/versions"
)

// pollDelays are the delays between the polls of a checkWaiter: the first
// soon after the action applied, then slower, up to the longest.
type pollDelays struct{ first, longest time.Duration }

var defaultPolls = pollDelays{first: 250 * time.Millisecond, longest: 2 * time.Second}

// WithHealthChecker makes the Runner's waits (install, upgrade and rollback
// with kstatus, the default strategy) read each object of the release with
// checker, as a Kustomization's health check does, instead of the Helm
// SDK's watcher. The SDK's watcher lists and watches every kind of the
// release in its whole namespace for every action: with many releases in
// one namespace, each install decodes the objects of all the others. Hooks
// and waits for deletion keep the SDK's own waiter.
func WithHealthChecker(checker *health.Checker) Option {
	return func(r *Runner) { r.checker = checker }
}

// WithHealthWatch makes the checked waits (WithHealthChecker) take the
// health of an object that the last poll found not ready from watch, which
// judges the objects of some kinds as they are delivered (see
// health.Pending), rather than read it: a Deployment that becomes
// available costs no read. For releases on the cluster that watch
// watches.
func WithHealthWatch(watch health.Watch) Option {
	return func(r *Runner) { r.watch = watch }
}

// WithHealthWakes makes the checked waits (WithHealthChecker) poll again as
// soon as wakes tells that the health of an object they wait for changed,
// rather than at the next poll only: a release is deployed the moment its
// last object becomes ready. wakes should tell of the watch of
// WithHealthWatch.
func WithHealthWakes(wakes *health.Wakes) Option {
	return func(r *Runner) { r.wakes = wakes }
}

// checkingClient is the kube.Client of every action: it asks no discovery
// request to know the cluster is reachable, and, with a health.Checker, its
// kstatus waiter polls the health of the release's objects with it.
type checkingClient struct {
	*kube.Client
	// checker is nil for the SDK's own waiters.
	checker *health.Checker
	// watch, if set, answers the polls after the first (WithHealthWatch).
	watch health.Watch
	// wakes, if set, starts a poll early (WithHealthWakes).
	wakes *health.Wakes
	// polls are the delays between polls.
	polls pollDelays
	// applied, when set, receives the versions of what each apply applied.
	applied AppliedFunc
	// ctx ends the waits with the action.
	ctx context.Context
}

// IsReachable implements kube.Interface without a request: the action's
// configuration was built from the cluster's capabilities, which discovery
// gave at most capabilitiesTTL ago, and the action's first request says
// soon enough when the cluster has gone since.
func (c *checkingClient) IsReachable() error {
	return nil
}

// AppliedFunc receives, by object, the fields version (see
// versions.FieldsDigest, of FieldManager) that the API server's answer to
// an apply of an action gave each object it applied.
type AppliedFunc func(map[inventory.ObjMetadata]string)

// observeApplied makes the applies of the action of cfg report to fn.
func observeApplied(cfg *action.Configuration, fn AppliedFunc) {
	if c, ok := cfg.KubeClient.(*checkingClient); ok {
		c.applied = fn
	}
}

// Create implements kube.Interface, and reports what it created.
func (c *checkingClient) Create(resources kube.ResourceList, opts ...kube.ClientCreateOption) (*kube.Result, error) {
	res, err := c.Client.Create(resources, opts...)
	if err == nil {
		c.report(resources)
	}
	return res, err
}

// Update implements kube.Interface, and reports what it applied.
func (c *checkingClient) Update(original, target kube.ResourceList, opts ...kube.ClientUpdateOption) (*kube.Result, error) {
	res, err := c.Client.Update(original, target, opts...)
	if err == nil {
		c.report(target)
	}
	return res, err
}

// report gives c.applied the fields versions of the objects of resources
// that the API server returned.
func (c *checkingClient) report(resources kube.ResourceList) {
	if c.applied == nil {
		return
	}
	applied := appliedObjects(resources)
	out := make(map[inventory.ObjMetadata]string, len(applied))
	for _, u := range applied {
		out[inventory.ObjMetadataOf(u)] = objversions.FieldsDigest(u, FieldManager)
	}
	c.applied(out)
}

// GetWaiter implements kube.Interface.
func (c *checkingClient) GetWaiter(ws kube.WaitStrategy) (kube.Waiter, error) {
	return c.GetWaiterWithOptions(ws)
}

// GetWaiterWithOptions implements kube.InterfaceWaitOptions: kstatus waits
// poll the checker; the others are the SDK's.
func (c *checkingClient) GetWaiterWithOptions(ws kube.WaitStrategy, opts ...kube.WaitOption) (kube.Waiter, error) {
	sdk, err := c.Client.GetWaiterWithOptions(ws, opts...)
	if err != nil || ws != kube.StatusWatcherStrategy || c.checker == nil {
		return sdk, err
	}
	polls := c.polls
	if polls.first <= 0 {
		polls = defaultPolls
	}
	return &checkWaiter{Waiter: sdk, checker: c.checker, watch: c.watch, wakes: c.wakes, polls: polls, ctx: c.ctx}, nil
}

// checkWaiter waits until the objects of a release are Current by reading
// each of them, again and again, until they are or the wait times out.
type checkWaiter struct {
	// Waiter is the SDK's, for hooks and deletions.
	kube.Waiter
	checker *health.Checker
	watch   health.Watch
	wakes   *health.Wakes
	polls   pollDelays
	ctx     context.Context
}

// Wait implements kube.Waiter: every object but Jobs must be Current.
func (w *checkWaiter) Wait(resources kube.ResourceList, timeout time.Duration) error {
	return w.waitCurrent(resources, timeout, false)
}

// WaitWithJobs implements kube.Waiter: every object must be Current,
// Jobs complete.
func (w *checkWaiter) WaitWithJobs(resources kube.ResourceList, timeout time.Duration) error {
	return w.waitCurrent(resources, timeout, true)
}

func (w *checkWaiter) waitCurrent(resources kube.ResourceList, timeout time.Duration, jobs bool) error {
	if timeout <= 0 {
		timeout = kube.DefaultStatusWatcherTimeout
	}
	ctx, cancel := context.WithTimeout(w.ctx, timeout)
	defer cancel()
	refs, err := waitedRefs(resources, jobs)
	if err != nil {
		return err
	}
	delay := w.polls.first
	// A change after the subscription, during a check say, wakes the
	// next poll.
	woken, unsubscribe := w.wakes.Subscribe(refs)
	defer unsubscribe()
	// The first check reads only what the action's apply did not return.
	checker := w.checker.WithLive(appliedObjects(resources))
	for len(refs) > 0 {
		result, err := checker.Check(ctx, refs)
		if err != nil {
			if ctx.Err() != nil {
				return fmt.Errorf("waiting for the release's objects: %w", ctx.Err())
			}
			return fmt.Errorf("waiting for the release's objects: %w", err)
		}
		if failed := result.Failed(); len(failed) > 0 {
			return notReadyError(failed, nil)
		}
		notReady := result.NotReady()
		refs = health.Refs(notReady)
		if len(refs) == 0 {
			return nil
		}
		checker = w.checker
		if w.watch != nil {
			checker = w.checker.WithVerdicts(health.NewPending(w.watch, notReady))
		}
		select {
		case <-ctx.Done():
			return notReadyError(notReady, ctx.Err())
		case <-time.After(delay):
		case <-woken:
		}
		delay = min(2*delay, w.polls.longest)
	}
	return nil
}

// appliedObjects returns, by inventory ID, the objects of resources as the
// API server returned them to the action (those that carry a
// resourceVersion): the SDK refreshes each object it creates or patches
// with the server's answer, so they are as fresh as a read.
func appliedObjects(resources kube.ResourceList) map[string]*unstructured.Unstructured {
	out := make(map[string]*unstructured.Unstructured, len(resources))
	for _, info := range resources {
		u, ok := info.Object.(*unstructured.Unstructured)
		if !ok || u.GetResourceVersion() == "" {
			continue
		}
		out[inventory.ObjMetadataOf(u).ID()] = u
	}
	return out
}

// waitedRefs returns the objects of resources that a wait waits for: all
// but paused Deployments, and Jobs only with jobs.
func waitedRefs(resources kube.ResourceList, jobs bool) ([]health.ObjectRef, error) {
	refs := make([]health.ObjectRef, 0, len(resources))
	for _, info := range resources {
		gvk := info.Object.GetObjectKind().GroupVersionKind()
		if info.Mapping != nil {
			gvk = info.Mapping.GroupVersionKind
		}
		if gvk.Group == "batch" && gvk.Kind == "Job" && !jobs {
			continue
		}
		if gvk.Group == "apps" && gvk.Kind == "Deployment" {
			paused, err := deploymentPaused(info.Object)
			if err != nil {
				return nil, fmt.Errorf("Deployment %s/%s: %w", info.Namespace, info.Name, err)
			}
			if paused {
				continue
			}
		}
		apiVersion, kind := gvk.ToAPIVersionAndKind()
		refs = append(refs, health.ObjectRef{APIVersion: apiVersion, Kind: kind, Namespace: info.Namespace, Name: info.Name})
	}
	return refs, nil
}

// deploymentPaused tells whether a Deployment's spec.paused is set.
func deploymentPaused(obj runtime.Object) (bool, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		fields, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
		if err != nil {
			return false, err
		}
		u = &unstructured.Unstructured{Object: fields}
	}
	paused, _, err := unstructured.NestedBool(u.Object, "spec", "paused")
	return paused, err
}

// notReadyError says which objects are not ready, and why the wait ended
// (cause, when it timed out or was cancelled).
func notReadyError(objs []health.ObjectStatus, cause error) error {
	lines := make([]string, 0, len(objs))
	for _, s := range objs {
		lines = append(lines, s.String())
	}
	err := fmt.Errorf("resources not ready: %s", strings.Join(lines, "; "))
	if cause != nil {
		return errors.Join(err, cause)
	}
	return err
}
