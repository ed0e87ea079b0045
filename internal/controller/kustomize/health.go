package kustomize

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	kustomizev1 "github.com/windlass-dev/windlass/api/kustomize/v1"
	"github.com/windlass-dev/windlass/api/meta"
	"github.com/windlass-dev/windlass/internal/conditions"
	"github.com/windlass-dev/windlass/internal/health"
	"github.com/windlass-dev/windlass/internal/impersonation"
	"github.com/windlass-dev/windlass/internal/inventory"
	kspec "github.com/windlass-dev/windlass/internal/kustomization"
	"github.com/windlass-dev/windlass/internal/reconcile/outcome"
)

// Health checks do not hold a worker: a run checks once, and while objects
// are in progress the Kustomization is Ready=Unknown and looked at again
// soon (healthRecheckDelay), by a run that finds nothing to build or apply
// and reads only the objects not healthy yet. A new source revision (or any
// other new input) is handled at once, instead of waiting for the old
// revision's objects.

// Bounds of the delay between two health checks of one wait.
const (
	minHealthRecheck = 500 * time.Millisecond
	maxHealthRecheck = 5 * time.Second
)

// healthRecheckDelay returns when to check again a wait that began elapsed
// ago and ends in remaining: soon at first, since most objects are healthy
// within a second or two of being applied, then less often.
func healthRecheckDelay(elapsed, remaining time.Duration) time.Duration {
	d := min(max(elapsed, minHealthRecheck), maxHealthRecheck)
	return max(min(d, remaining), 0) + 10*time.Millisecond
}

// healthWaits remembers, for each Kustomization whose objects are not all
// healthy yet, when it began to wait for the health of its revision (for
// the timeout) and which objects it still waits for: a recheck reads only
// those. With wakes set, each wait watches its objects, and woken is
// called with the Kustomization's key when the watch tells that one of
// them changed its health (see wake.go).
type healthWaits struct {
	mu     sync.Mutex
	states map[types.NamespacedName]healthWait
	wakes  *health.Wakes
	woken  func(types.NamespacedName)
}

type healthWait struct {
	revision string
	since    time.Time
	// pending holds the objects not healthy yet, as the last check found
	// them.
	pending []health.ObjectStatus
	// unwatch ends the watch of pending's objects.
	unwatch func()
}

// get returns the wait of key for revision, if one is under way.
func (h *healthWaits) get(key types.NamespacedName, revision string) (healthWait, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	w, ok := h.states[key]
	return w, ok && w.revision == revision
}

// current returns the wait of key, if one is under way.
func (h *healthWaits) current(key types.NamespacedName) (healthWait, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	w, ok := h.states[key]
	return w, ok
}

// wait records that key still waits for the pending objects of revision,
// and returns when the wait began: now, unless it already waited for that
// revision.
func (h *healthWaits) wait(key types.NamespacedName, revision string, pending []health.ObjectStatus) time.Time {
	h.mu.Lock()
	defer h.mu.Unlock()
	last, ok := h.states[key]
	w := last
	if !ok || w.revision != revision {
		w = healthWait{revision: revision, since: time.Now()}
	}
	if last.unwatch != nil {
		last.unwatch()
	}
	w.pending = pending
	w.unwatch = h.watch(key, pending)
	if h.states == nil {
		h.states = map[types.NamespacedName]healthWait{}
	}
	h.states[key] = w
	return w.since
}

// watch makes the changes of the pending objects' health wake key.
func (h *healthWaits) watch(key types.NamespacedName, pending []health.ObjectStatus) func() {
	if h.wakes == nil {
		return nil
	}
	refs := make([]health.ObjectRef, 0, len(pending))
	for _, p := range pending {
		refs = append(refs, p.Ref)
	}
	return h.wakes.Watch(refs, func() { h.woken(key) })
}

// end forgets the wait of key.
func (h *healthWaits) end(key types.NamespacedName) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if w := h.states[key]; w.unwatch != nil {
		w.unwatch()
	}
	delete(h.states, key)
}

// checkHealth checks once the objects that spec.wait or spec.healthChecks
// name, and sets the Healthy condition. Objects still in progress make it
// return a Progressing error that requeues the Kustomization, until the
// timeout, counted from the first check of the revision, fails the check.
// live holds objects already read in this run, by inventory ID.
func (r *KustomizationReconciler) checkHealth(ctx context.Context, obj *kustomizev1.Kustomization, t *impersonation.Target,
	live map[string]*unstructured.Unstructured) error {
	key := types.NamespacedName{Namespace: obj.Namespace, Name: obj.Name}
	revision := obj.Status.LastAttemptedRevision
	refs := healthRefs(obj, kspec.Inventory(obj))
	w, waiting := r.waits.get(key, revision)
	if waiting {
		refs = health.Refs(w.pending)
	}
	if len(refs) == 0 {
		r.waits.end(key)
		conditions.Delete(obj, meta.HealthyCondition)
		return nil
	}
	exprs, err := healthExprs(obj)
	if err != nil {
		return err
	}
	versions := r.localVersions(obj)
	if versions != nil {
		refs = r.healthy.toCheck(ctx, key, refs, versions)
	}
	reads := &recordingReader{Reader: health.LiveReader(live, t.Client)}
	checker := health.NewChecker(reads, t.Mapper)
	var verdicts *health.Pending
	if r.Health != nil && versions != nil && waiting {
		verdicts = health.NewPending(r.Health, w.pending)
		checker = checker.WithVerdicts(verdicts)
	}
	result, err := checker.Check(ctx, refs, exprs...)
	if err != nil {
		return outcome.Fail(kustomizev1.HealthCheckFailedReason, fmt.Errorf("checking health: %w", err))
	}
	if versions != nil {
		r.healthy.record(key, result)
		r.refreshVersions(key, reads, verdicts)
	}
	if result.AllCurrent() {
		r.waits.end(key)
		conditions.MarkTrue(obj, meta.HealthyCondition, meta.SucceededReason, "Health check passed")
		return nil
	}
	return r.failOrProgress(ctx, obj, key, result, waiting)
}

// healthExprs returns spec.healthCheckExprs; expressions that do not
// compile stall.
func healthExprs(obj *kustomizev1.Kustomization) ([]health.Expr, error) {
	exprs, err := kspec.HealthExprs(obj.Spec.HealthCheckExprs)
	if err != nil {
		return nil, outcome.Stall(meta.InvalidCELExpressionReason, err)
	}
	return exprs, nil
}

// failOrProgress judges a health check whose objects are not all current:
// a Failed object or the timeout, counted from the first check of the
// revision, fails it; otherwise the wait goes on, and is rechecked soon.
// waiting tells whether this check continued a wait.
func (r *KustomizationReconciler) failOrProgress(ctx context.Context, obj *kustomizev1.Kustomization, key types.NamespacedName,
	result health.Result, waiting bool) error {
	revision := obj.Status.LastAttemptedRevision
	timeout := obj.GetTimeout()
	notReady := result.NotReady()
	names := make([]string, 0, len(notReady))
	for _, s := range notReady {
		names = append(names, s.String())
	}
	elapsed := time.Since(r.waits.wait(key, revision, notReady))
	var failure *health.WaitError
	switch {
	case len(result.Failed()) > 0:
		failure = &health.WaitError{Err: health.ErrFailed, Timeout: timeout, Objects: result.Failed()}
	case elapsed >= timeout:
		failure = &health.WaitError{Err: health.ErrTimeout, Timeout: timeout, Objects: notReady}
	}
	if failure != nil {
		r.waits.end(key)
		conditions.MarkFalse(obj, meta.HealthyCondition, kustomizev1.HealthCheckFailedReason, "%s", failure.Error())
		return outcome.Fail(kustomizev1.HealthCheckFailedReason, failure)
	}
	msg := fmt.Sprintf("health check of revision '%s' in progress: %s", revision, strings.Join(names, "; "))
	conditions.MarkUnknown(obj, meta.HealthyCondition, meta.ProgressingReason, "%s", msg)
	delay := healthRecheckDelay(elapsed, timeout-elapsed)
	// The watch may have judged the last object between this check and
	// the wait's record, and would not tell it again.
	r.wakeIfDecided(ctx, key)
	if !waiting {
		// Objects just applied are seldom healthy at once, and most are
		// within the first recheck: that one tells users, not this one.
		return outcome.ProgressQuietly(meta.ProgressingReason, errors.New(msg), delay)
	}
	return outcome.Progress(meta.ProgressingReason, errors.New(msg), delay)
}

// healthRefs returns the objects to check: every applied object (the
// inventory) with spec.wait, else spec.healthChecks.
func healthRefs(obj *kustomizev1.Kustomization, applied []inventory.Entry) []health.ObjectRef {
	var refs []health.ObjectRef
	if obj.Spec.Wait {
		for _, e := range applied {
			if ref, ok := entryRef(e); ok {
				refs = append(refs, ref)
			}
		}
		return refs
	}
	for _, hc := range obj.Spec.HealthChecks {
		ns := hc.Namespace
		if ns == "" {
			ns = obj.Namespace
		}
		apiVersion := hc.APIVersion
		if apiVersion == "" {
			apiVersion = guessAPIVersion(hc.Kind, ns, hc.Name, applied)
		}
		refs = append(refs, health.ObjectRef{APIVersion: apiVersion, Kind: hc.Kind, Namespace: ns, Name: hc.Name})
	}
	return refs
}

// entryRef returns the health reference of an inventory entry.
func entryRef(e inventory.Entry) (health.ObjectRef, bool) {
	id, err := e.ObjMetadata()
	if err != nil {
		return health.ObjectRef{}, false
	}
	gv := schema.GroupVersion{Group: id.Group, Version: e.Version}
	return health.ObjectRef{APIVersion: gv.String(), Kind: id.Kind, Namespace: id.Namespace, Name: id.Name}, true
}

// wellKnownAPIVersions are the API versions of the kinds that health checks
// name most, for checks written without an apiVersion (as v1beta1 allowed).
var wellKnownAPIVersions = map[string]string{
	"Deployment": "apps/v1", "StatefulSet": "apps/v1", "DaemonSet": "apps/v1", "ReplicaSet": "apps/v1",
	"Job": "batch/v1", "CronJob": "batch/v1", "Service": "v1", "Pod": "v1", "PersistentVolumeClaim": "v1",
	"Namespace": "v1", "ConfigMap": "v1", "Secret": "v1", "Ingress": "networking.k8s.io/v1",
	"HelmRelease": "helm.toolkit.fluxcd.io/v2", "Kustomization": "kustomize.toolkit.fluxcd.io/v1",
}

// guessAPIVersion returns the API version of the object a health check
// names without one: that of the applied object it names, else the
// well-known version of its kind.
func guessAPIVersion(kind, ns, name string, applied []inventory.Entry) string {
	for _, e := range applied {
		if ref, ok := entryRef(e); ok && ref.Kind == kind && ref.Name == name && (ref.Namespace == ns || ref.Namespace == "") {
			return ref.APIVersion
		}
	}
	return wellKnownAPIVersions[kind]
}
