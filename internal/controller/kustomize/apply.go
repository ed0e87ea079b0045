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
// of them: when the dry run refuses one, nothing is applied. It returns
// what it applied and records the changes in an event.
//
// Objects join the status inventory before they are written (see
// writeAhead), so that a later revision can prune them even when this run
// dies half-way; when an apply fails half-way, what was applied stays in
// the inventory for the same reason.
func (r *KustomizationReconciler) apply(ctx context.Context, obj *kustomizev1.Kustomization, m *ssa.Manager,
	objs []*unstructured.Unstructured, revision string, patcher *patch.Helper) (*ssa.ChangeSet, error) {
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
	return changes, nil
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
func (r *KustomizationReconciler) prune(ctx context.Context, obj *kustomizev1.Kustomization, m *ssa.Manager,
	applied []inventory.Entry, revision string) error {
	stale := inventory.Diff(inventoryOf(obj), applied)
	if !obj.Spec.Prune || len(stale) == 0 {
		recordInventory(obj, applied)
		return nil
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
	r.forget(client.ObjectKeyFromObject(obj))
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
