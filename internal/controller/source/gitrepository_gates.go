package source

import (
	"context"

	sourcev1 "github.com/windlass-dev/windlass/api/source/v1"
	"github.com/windlass-dev/windlass/internal/reconcile/outcome"
)

// held is the GitRepository's Held: while a gate of spec.gates is closed
// or missing nothing is fetched, and the last artifact stays in status and
// in storage, served, so that appliers go on reconciling it (and
// correcting drift): an artifact lost from storage meanwhile is rebuilt at
// the held revision (see rebuildHeldArtifact), and Summarize then says
// Ready again. Blocked=True says so (gate.Enforce); it is deleted when
// every gate is open or there is none. Blocked is not a negative
// condition: Ready keeps describing the last artifact.
func (r *GitRepositoryReconciler) held(ctx context.Context, obj *sourcev1.GitRepository, heldErr error) error {
	rebuilt, err := r.rebuildHeldArtifact(ctx, obj)
	if err != nil {
		return err
	}
	if rebuilt {
		return outcome.MarkRestored(heldErr)
	}
	return heldErr
}
