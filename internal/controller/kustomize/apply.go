package kustomize

import (
	"context"
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	kustomizev1 "github.com/windlass-dev/windlass/api/kustomize/v1"
	"github.com/windlass-dev/windlass/api/meta"
	"github.com/windlass-dev/windlass/internal/conditions"
	"github.com/windlass-dev/windlass/internal/health"
	"github.com/windlass-dev/windlass/internal/inventory"
	"github.com/windlass-dev/windlass/internal/metrics"
	"github.com/windlass-dev/windlass/internal/patch"
	"github.com/windlass-dev/windlass/internal/reconcile"
	"github.com/windlass-dev/windlass/internal/ssa"
)

// applyManager returns the apply engine of obj for target t.
func applyManager(obj *kustomizev1.Kustomization, t *target) (*ssa.Manager, error) {
	return ssa.New(t.client, t.mapper, ssa.Options{
		FieldManager: FieldManager,
		Owner:        ssa.Owner{Group: kustomizev1.GroupVersion.Group, Name: obj.Name, Namespace: obj.Namespace},
	})
}

// apply applies the objects in stages, after a server-side dry run of all
// of them: when the dry run refuses one, nothing is applied. It returns the
// inventory of what it applied and records the changes in an event.
//
// Objects join the status inventory before they are written (see
// writeAhead), so that a later revision can prune them even when this run
// dies half-way; when an apply fails half-way, what was applied stays in
// the inventory for the same reason.
func (r *KustomizationReconciler) apply(ctx context.Context, obj *kustomizev1.Kustomization, t *target,
	objs []*unstructured.Unstructured, revision string, patcher *patch.Helper) ([]inventory.Entry, error) {
	m, err := applyManager(obj, t)
	if err != nil {
		return nil, err
	}
	changes, err := m.ApplyAllStaged(ctx, objs, ssa.ApplyOptions{
		Force: obj.Spec.Force, WaitTimeout: obj.GetTimeout(), BeforeWrite: writeAhead(obj, patcher),
	})
	if changes.Changed() {
		r.event(obj, "Normal", kustomizev1.ReconciliationSucceededReason, fmt.Sprintf("%s\nrevision: %s", changes.Summary(), revision))
	}
	var invalid *ssa.ValidationError
	switch {
	case errors.As(err, &invalid):
		return nil, reconcile.Fail(kustomizev1.ValidationFailedReason, err)
	case err != nil:
		recordInventory(obj, inventory.Merge(inventoryOf(obj), changes.Inventory()))
		return nil, reconcile.Fail(kustomizev1.ReconciliationFailedReason, err)
	}
	return changes.Inventory(), nil
}

// writeAhead returns the ssa.ApplyOptions.BeforeWrite of obj: it adds the
// objects about to be written to the status inventory, and patches the
// status when that added any, before they are written. Objects already in
// the inventory cost nothing.
func writeAhead(obj *kustomizev1.Kustomization, patcher *patch.Helper) func(context.Context, []inventory.Entry) error {
	return func(ctx context.Context, entries []inventory.Entry) error {
		current := inventoryOf(obj)
		if len(inventory.Diff(entries, current)) == 0 {
			return nil
		}
		recordInventory(obj, inventory.Merge(current, entries))
		if err := patcher.Patch(ctx, obj); err != nil {
			return fmt.Errorf("recording the inventory before applying: %w", err)
		}
		return nil
	}
}

// prune deletes the objects of the last inventory that left the source,
// when spec.prune is on, and records the new inventory. Objects whose
// deletion was refused stay in the inventory, so that the next run tries
// again.
func (r *KustomizationReconciler) prune(ctx context.Context, obj *kustomizev1.Kustomization, t *target,
	applied []inventory.Entry, revision string) error {
	stale := inventory.Diff(inventoryOf(obj), applied)
	if !obj.Spec.Prune || len(stale) == 0 {
		recordInventory(obj, applied)
		return nil
	}
	m, err := applyManager(obj, t)
	if err != nil {
		return err
	}
	changes, err := m.Prune(ctx, stale, ssa.PruneOptions{})
	if changes != nil && changes.Changed() {
		r.event(obj, "Normal", "Progressing", fmt.Sprintf("%s\nrevision: %s", changes.Summary(), revision))
	}
	recordInventory(obj, inventory.Merge(applied, ssa.Survivors(err)))
	if err != nil {
		return reconcile.Fail(meta.PruneFailedReason, err)
	}
	return nil
}

// checkHealth waits, within the timeout, until the objects that spec.wait
// or spec.healthChecks name are healthy, and sets the Healthy condition.
func (r *KustomizationReconciler) checkHealth(ctx context.Context, obj *kustomizev1.Kustomization, t *target, objs []*unstructured.Unstructured) error {
	refs := healthRefs(obj, objs)
	if len(refs) == 0 {
		conditions.Delete(obj, meta.HealthyCondition)
		return nil
	}
	exprs := make([]health.Expr, 0, len(obj.Spec.HealthCheckExprs))
	for _, e := range obj.Spec.HealthCheckExprs {
		exprs = append(exprs, health.Expr{APIVersion: e.APIVersion, Kind: e.Kind, Current: e.Current, InProgress: e.InProgress, Failed: e.Failed})
	}
	if err := health.ValidateExprs(exprs); err != nil {
		return reconcile.Stall(meta.InvalidCELExpressionReason, err)
	}
	wctx, done := r.waits.start(ctx, client.ObjectKeyFromObject(obj), obj.Status.LastAttemptedRevision)
	defer done()
	checker := health.NewChecker(t.client, t.mapper)
	err := checker.Wait(wctx, refs, health.WaitOptions{Timeout: obj.GetTimeout(), FailFast: true, Exprs: exprs})
	if errors.Is(context.Cause(wctx), errNewRevision) {
		conditions.MarkUnknown(obj, meta.HealthyCondition, kustomizev1.HealthCheckCanceledReason,
			"health check of revision '%s' canceled: a new revision arrived", obj.Status.LastAttemptedRevision)
		return reconcile.Fail(kustomizev1.HealthCheckCanceledReason,
			fmt.Errorf("health check of revision '%s' canceled: a new revision arrived", obj.Status.LastAttemptedRevision))
	}
	if err != nil {
		conditions.MarkFalse(obj, meta.HealthyCondition, kustomizev1.HealthCheckFailedReason, "%s", err.Error())
		return reconcile.Fail(kustomizev1.HealthCheckFailedReason, err)
	}
	conditions.MarkTrue(obj, meta.HealthyCondition, meta.SucceededReason, "Health check passed")
	return nil
}

// healthRefs returns the objects to check: every applied object with
// spec.wait, else spec.healthChecks.
func healthRefs(obj *kustomizev1.Kustomization, objs []*unstructured.Unstructured) []health.ObjectRef {
	var refs []health.ObjectRef
	if obj.Spec.Wait {
		for _, o := range objs {
			refs = append(refs, health.ObjectRef{APIVersion: o.GetAPIVersion(), Kind: o.GetKind(), Namespace: o.GetNamespace(), Name: o.GetName()})
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
			apiVersion = guessAPIVersion(hc.Kind, ns, hc.Name, objs)
		}
		refs = append(refs, health.ObjectRef{APIVersion: apiVersion, Kind: hc.Kind, Namespace: ns, Name: hc.Name})
	}
	return refs
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
func guessAPIVersion(kind, ns, name string, objs []*unstructured.Unstructured) string {
	for _, o := range objs {
		if o.GetKind() == kind && o.GetName() == name && (o.GetNamespace() == ns || o.GetNamespace() == "") {
			return o.GetAPIVersion()
		}
	}
	return wellKnownAPIVersions[kind]
}

// reconcileDelete deletes the applied objects as the deletion policy says
// (never for a suspended Kustomization), then removes the finalizer. A
// deletion that fails is retried; the finalizer stays until it succeeds.
func (r *KustomizationReconciler) reconcileDelete(ctx context.Context, obj *kustomizev1.Kustomization) (ctrl.Result, error) {
	if !controllerutil.ContainsFinalizer(obj, meta.Finalizer) {
		return ctrl.Result{}, nil
	}
	if !obj.Spec.Suspend && obj.Status.Inventory != nil {
		if err := r.deleteInventory(ctx, obj); err != nil {
			r.event(obj, "Warning", meta.PruneFailedReason, err.Error())
			return ctrl.Result{}, err
		}
	}
	patcher := patch.NewHelper(obj, r.Client)
	controllerutil.RemoveFinalizer(obj, meta.Finalizer)
	metrics.Forget(kustomizev1.KustomizationKind, obj)
	return ctrl.Result{}, patcher.Patch(ctx, obj)
}

func (r *KustomizationReconciler) deleteInventory(ctx context.Context, obj *kustomizev1.Kustomization) error {
	t, err := r.Applier.For(ctx, obj, r.Client)
	if err != nil {
		return err
	}
	m, err := applyManager(obj, t)
	if err != nil {
		return err
	}
	changes, err := m.Delete(ctx, inventoryOf(obj), ssa.DeleteOptions{
		Policy: ssa.DeletionPolicy(obj.GetDeletionPolicy()), Prune: obj.Spec.Prune, WaitTimeout: obj.GetTimeout(),
	})
	if changes != nil && changes.Changed() {
		r.event(obj, "Normal", "Deleted", changes.Summary())
	}
	if err != nil && !errors.Is(err, context.Canceled) {
		return fmt.Errorf("deleting the applied objects: %w", err)
	}
	return err
}
