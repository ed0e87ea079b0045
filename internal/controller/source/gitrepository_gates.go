package source

import (
	"context"

	sourcev1 "github.com/windlass-dev/windlass/api/source/v1"
	"github.com/windlass-dev/windlass/internal/gate"
	"github.com/windlass-dev/windlass/internal/reconcile"
)

// reconcileGates holds the run while a gate of spec.gates is closed or
// missing: nothing is fetched, and the last artifact stays in status and in
// storage, served, so that appliers go on reconciling it (and correcting
// drift): an artifact lost from storage meanwhile is rebuilt at the held
// revision (see rebuildHeldArtifact), and Summarize then says Ready again.
// Blocked=True says so; it is deleted
// when every gate is open or there is none. Blocked is not a negative
// condition: Ready keeps describing the last artifact.
func (r *GitRepositoryReconciler) reconcileGates(ctx context.Context, obj *sourcev1.GitRepository, _ *gitScope) (reconcile.Result, error) {
	err := gate.Enforce(ctx, r.Client, r.Events, obj, gate.Source, r.NoCrossNamespaceRefs, obj.GetRequeueAfter())
	if reconcile.IsHolding(err) {
		rebuilt, rebuildErr := r.rebuildHeldArtifact(ctx, obj)
		if rebuildErr != nil {
			return reconcile.ResultEmpty, rebuildErr
		}
		if rebuilt {
			err = reconcile.MarkRestored(err)
		}
	}
	if err != nil {
		return reconcile.ResultEmpty, err
	}
	return reconcile.ResultSuccess, nil
}
