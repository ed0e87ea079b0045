package source

import (
	"context"
	"errors"
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"

	"github.com/windlass-dev/windlass/api/meta"
	sourcev1 "github.com/windlass-dev/windlass/api/source/v1"
	"github.com/windlass-dev/windlass/internal/conditions"
	"github.com/windlass-dev/windlass/internal/gate"
	"github.com/windlass-dev/windlass/internal/reconcile"
)

// reconcileGates holds the run while a gate of spec.gates is closed or
// missing: nothing is fetched, and the last artifact stays in status and in
// storage, served, so that appliers go on reconciling it (and correcting
// drift): an artifact lost from storage meanwhile is rebuilt at the held
// revision (see rebuildHeldArtifact). Blocked=True says so; it is deleted
// when every gate is open or there is none. Blocked is not a negative
// condition: Ready keeps describing the last artifact.
func (r *GitRepositoryReconciler) reconcileGates(ctx context.Context, obj *sourcev1.GitRepository, _ *gitScope) (reconcile.Result, error) {
	if len(obj.GetGates()) == 0 {
		conditions.Delete(obj, meta.BlockedCondition)
		return reconcile.ResultSuccess, nil
	}
	err := gate.Check(ctx, r.Client, obj, r.NoCrossNamespaceRefs)
	var (
		closed *gate.ClosedError
		cross  *gate.CrossNamespaceError
	)
	switch {
	case err == nil:
		conditions.Delete(obj, meta.BlockedCondition)
		return reconcile.ResultSuccess, nil
	case errors.As(err, &closed):
		msg := blockedMessage(closed)
		if !conditions.IsTrue(obj, meta.BlockedCondition) || conditions.Message(obj, meta.BlockedCondition) != msg {
			r.Events.Normal(ctx, obj, meta.GateClosedReason, "", msg)
		}
		conditions.MarkTrue(obj, meta.BlockedCondition, meta.GateClosedReason, "%s", msg)
		if err := r.rebuildHeldArtifact(ctx, obj); err != nil {
			return reconcile.ResultEmpty, err
		}
		return reconcile.ResultEmpty, reconcile.Hold(meta.GateClosedReason, errors.New(msg), obj.GetRequeueAfter())
	case errors.As(err, &cross):
		conditions.MarkTrue(obj, meta.BlockedCondition, meta.AccessDeniedReason, "%s", err.Error())
		return reconcile.ResultEmpty, reconcile.Stall(meta.AccessDeniedReason, err)
	}
	return reconcile.ResultEmpty, err
}

// blockedMessage is the message of Blocked=True for the gate that holds
// the object back.
func blockedMessage(closed *gate.ClosedError) string {
	state := "closed"
	if closed.Missing {
		state = "missing"
	}
	return fmt.Sprintf("Fetching new revisions is blocked, gate '%s' is %s.", closed.Gate, state)
}

// gateEvents returns the handler of the watch on Gates: a gate that opens,
// closes, appears or goes reconciles the GitRepositories behind it at once.
func (r *GitRepositoryReconciler) gateEvents() handler.EventHandler {
	return gate.EnqueueConsumers(r.Client, func() (client.ObjectList, func() []client.Object) {
		list := &sourcev1.GitRepositoryList{}
		return list, func() []client.Object {
			objs := make([]client.Object, 0, len(list.Items))
			for i := range list.Items {
				objs = append(objs, &list.Items[i])
			}
			return objs
		}
	})
}
