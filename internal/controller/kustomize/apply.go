package kustomize

import (
	"context"
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	kustomizev1 "github.com/windlass-dev/windlass/api/kustomize/v1"
	"github.com/windlass-dev/windlass/api/meta"
	"github.com/windlass-dev/windlass/internal/imageupdate"
	"github.com/windlass-dev/windlass/internal/impersonation"
	"github.com/windlass-dev/windlass/internal/inventory"
	kspec "github.com/windlass-dev/windlass/internal/kustomization"
	"github.com/windlass-dev/windlass/internal/patch"
	"github.com/windlass-dev/windlass/internal/reconcile/outcome"
	"github.com/windlass-dev/windlass/internal/ssa"
)

// target returns where and as whom obj applies. A kubeconfig that can
// never work stalls until the spec or the Secret changes.
func (r *KustomizationReconciler) target(ctx context.Context, obj *kustomizev1.Kustomization) (*impersonation.Target, error) {
	t, err := r.Applier.For(ctx, impersonation.Identity{
		Namespace: obj.Namespace, ServiceAccountName: obj.Spec.ServiceAccountName, KubeConfig: obj.Spec.KubeConfig,
	}, r.Client)
	switch {
	case errors.Is(err, impersonation.ErrUnservedKubeConfig):
		return nil, outcome.Stall(meta.UnsupportedKubeConfigReason, err)
	case errors.Is(err, impersonation.ErrInvalidKubeConfig):
		return nil, outcome.Stall(kustomizev1.ReconciliationFailedReason, err)
	case err != nil:
		return nil, outcome.Fail(kustomizev1.ReconciliationFailedReason, err)
	}
	return t, nil
}

// applyManager returns the apply engine of obj for target t.
func (r *KustomizationReconciler) applyManager(obj *kustomizev1.Kustomization, t *impersonation.Target) (*ssa.Manager, error) {
	return ssa.New(t.Client, t.Mapper, ssa.Options{
		FieldManager: kspec.FieldManager,
		Owner:        kspec.Owner(obj),
		Versions:     r.localVersions(obj),
	})
}

// localVersions returns r.Versions when obj applies to the local cluster,
// whose objects it watches; nil otherwise.
func (r *KustomizationReconciler) localVersions(obj *kustomizev1.Kustomization) VersionWatch {
	if r.Versions == nil || obj.Spec.KubeConfig != nil {
		return nil
	}
	return r.Versions
}

// apply applies the objects in stages, after a server-side dry run of all
// of them: when the dry run refuses one, nothing is applied. It returns
// what it applied and records the changes in an event, with why the
// revision came when its artifact says (because, see appliedBecause).
//
// Objects join the status inventory before they are written (see
// writeAhead), so that a later revision can prune them even when this run
// dies half-way; when an apply fails half-way, what was applied stays in
// the inventory for the same reason, and is returned with the error.
//
// The first apply of a Kustomization, whose inventory is empty, has no
// applied state to keep: its objects are applied without dry runs (see
// ssa.ApplyOptions.Fresh), an object the API server refuses fails alone,
// and the inventory is written with the status at the end of the run.
func (r *KustomizationReconciler) apply(ctx context.Context, obj *kustomizev1.Kustomization, m *ssa.Manager,
	objs []*unstructured.Unstructured, revision, because string, patcher *patch.Helper) (*ssa.ChangeSet, error) {
	opts := ssa.ApplyOptions{Force: obj.Spec.Force, WaitTimeout: obj.GetTimeout(), Fresh: len(kspec.Inventory(obj)) == 0}
	if !opts.Fresh {
		opts.BeforeWrite = writeAhead(obj, patcher)
	}
	changes, err := m.ApplyAllStaged(ctx, objs, opts)
	if changes.Changed() {
		msg := fmt.Sprintf("%s\nrevision: %s", changes.Summary(), revision)
		if because != "" {
			msg += "\n" + because
		}
		r.Events.Normal(ctx, obj, kustomizev1.ReconciliationSucceededReason, revision, msg)
	}
	var invalid *ssa.ValidationError
	switch {
	case errors.As(err, &invalid):
		if invalid.Partial {
			recordInventory(obj, inventory.Merge(kspec.Inventory(obj), changes.Inventory()))
		}
		return changes, outcome.Fail(kustomizev1.ValidationFailedReason, err)
	case err != nil:
		recordInventory(obj, inventory.Merge(kspec.Inventory(obj), changes.Inventory()))
		return changes, outcome.Fail(kustomizev1.ReconciliationFailedReason, err)
	}
	return changes, nil
}

// appliedBecause says why a revision came, when its artifact carries the
// note of an automated image update (imageupdate.NoteMetadataKey): the
// event of its apply then tells which image it brings, so that an Alert
// announces the update when it reaches the cluster (seed 004).
func appliedBecause(artifact *meta.Artifact) string {
	if artifact == nil {
		return ""
	}
	note, ok := imageupdate.ParseNote(artifact.Metadata[imageupdate.NoteMetadataKey])
	if !ok {
		return ""
	}
	return note.Summary()
}

// writeAhead returns the ssa.ApplyOptions.BeforeWrite of obj: it adds the
// objects about to be written to the status inventory, and patches the
// status when that added any, before they are written. Objects already in
// the inventory cost nothing.
func writeAhead(obj *kustomizev1.Kustomization, patcher *patch.Helper) func(context.Context, []inventory.Entry) error {
	return func(ctx context.Context, entries []inventory.Entry) error {
		current := kspec.Inventory(obj)
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
	stale := inventory.Diff(kspec.Inventory(obj), applied)
	if !obj.Spec.Prune || len(stale) == 0 {
		recordInventory(obj, applied)
		return nil
	}
	changes, err := m.Prune(ctx, stale, ssa.PruneOptions{})
	recordApplied(changes, false)
	if changes != nil && changes.Changed() {
		r.Events.Normal(ctx, obj, meta.ProgressingReason, revision, fmt.Sprintf("%s\nrevision: %s", changes.Summary(), revision))
	}
	recordInventory(obj, inventory.Merge(applied, ssa.Survivors(err)))
	if err != nil {
		return outcome.Fail(meta.PruneFailedReason, err)
	}
	return nil
}

// finalize deletes the applied objects of a deleted Kustomization as the
// deletion policy says (never for a suspended one). A deletion that fails
// keeps the finalizer and is retried.
func (r *KustomizationReconciler) finalize(ctx context.Context, obj *kustomizev1.Kustomization) error {
	r.restoreInventory(obj)
	if obj.Spec.Suspend || obj.Status.Inventory == nil {
		return nil
	}
	if err := unservedKubeConfig(obj); err != nil {
		// Where the inventory lives cannot be reached: it is left in place.
		r.Events.Warning(ctx, obj, meta.UnsupportedKubeConfigReason, obj.Status.LastAppliedRevision,
			"the applied objects are left in place: "+err.Error())
		return nil
	}
	if err := r.deleteInventory(ctx, obj); err != nil {
		return outcome.Fail(meta.PruneFailedReason, err)
	}
	return nil
}

func (r *KustomizationReconciler) deleteInventory(ctx context.Context, obj *kustomizev1.Kustomization) error {
	t, err := r.target(ctx, obj)
	if err != nil {
		return err
	}
	m, err := r.applyManager(obj, t)
	if err != nil {
		return err
	}
	changes, err := m.Delete(ctx, kspec.Inventory(obj), ssa.DeleteOptions{
		Policy: ssa.DeletionPolicy(obj.GetDeletionPolicy()), Prune: obj.Spec.Prune, WaitTimeout: obj.GetTimeout(),
	})
	recordApplied(changes, false)
	if changes != nil && changes.Changed() {
		r.Events.Normal(ctx, obj, "Deleted", obj.Status.LastAppliedRevision, changes.Summary())
	}
	if err != nil && !errors.Is(err, context.Canceled) {
		return fmt.Errorf("deleting the applied objects: %w", err)
	}
	return err
}
