package kustomize

import (
	"context"
	"errors"
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"

	kustomizev1 "github.com/windlass-dev/windlass/api/kustomize/v1"
	"github.com/windlass-dev/windlass/api/meta"
	"github.com/windlass-dev/windlass/internal/conditions"
	"github.com/windlass-dev/windlass/internal/gate"
	"github.com/windlass-dev/windlass/internal/reconcile"
)

// reconcileGates holds the run while a gate of spec.gates is closed or
// missing: nothing is read, built, applied, pruned or drift-corrected, and
// Ready keeps describing the last run. It is the first step, so an apply
// under way when a gate closes finishes first. Approved tells whether the
// gates let the object reconcile; an object without gates has none.
func (r *KustomizationReconciler) reconcileGates(ctx context.Context, obj *kustomizev1.Kustomization, _ *ksScope) (reconcile.Result, error) {
	if len(obj.GetGates()) == 0 {
		conditions.Delete(obj, meta.ApprovedCondition)
		return reconcile.ResultSuccess, nil
	}
	err := gate.Check(ctx, r.Client, obj, r.NoCrossNamespaceRefs)
	var (
		closed *gate.ClosedError
		cross  *gate.CrossNamespaceError
	)
	switch {
	case err == nil:
		conditions.MarkTrue(obj, meta.ApprovedCondition, meta.GatesOpenedReason, "%s", approvedMessage(obj))
		return reconcile.ResultSuccess, nil
	case errors.As(err, &closed):
		msg := waitingMessage(closed)
		if c := conditions.Get(obj, meta.ApprovedCondition); c == nil || c.Status != metav1.ConditionFalse || c.Message != msg {
			r.Events.Normal(ctx, obj, meta.GateClosedReason, "", msg)
		}
		conditions.MarkFalse(obj, meta.ApprovedCondition, meta.GateClosedReason, "%s", msg)
		return reconcile.ResultEmpty, reconcile.Hold(meta.GateClosedReason, errors.New(msg), obj.GetRequeueAfter())
	case errors.As(err, &cross):
		conditions.MarkFalse(obj, meta.ApprovedCondition, meta.AccessDeniedReason, "%s", err.Error())
		return reconcile.ResultEmpty, reconcile.Stall(meta.AccessDeniedReason, err)
	}
	return reconcile.ResultEmpty, err
}

// waitingMessage is the message of Approved=False for the gate that holds
// the object back.
func waitingMessage(closed *gate.ClosedError) string {
	state := "closed"
	if closed.Missing {
		state = "missing"
	}
	return fmt.Sprintf("Reconciliation is waiting approval, gate '%s' is %s.", closed.Gate, state)
}

// approvedMessage is the message of Approved=True: every gate of obj,
// named, is open.
func approvedMessage(obj *kustomizev1.Kustomization) string {
	refs := obj.GetGates()
	names := make([]string, 0, len(refs))
	for _, ref := range refs {
		names = append(names, fmt.Sprintf("'%s'", gate.Key(obj, ref)))
	}
	if len(names) == 1 {
		return fmt.Sprintf("Reconciliation is approved, gate %s is open.", names[0])
	}
	return fmt.Sprintf("Reconciliation is approved, gates %s are open.", strings.Join(names, ", "))
}

// gateEvents returns the handler of the watch on Gates: a gate that opens,
// closes, appears or goes reconciles the Kustomizations behind it at once.
func (r *KustomizationReconciler) gateEvents() handler.EventHandler {
	return gate.EnqueueConsumers(r.Client, func() (client.ObjectList, func() []client.Object) {
		list := &kustomizev1.KustomizationList{}
		return list, func() []client.Object {
			objs := make([]client.Object, 0, len(list.Items))
			for i := range list.Items {
				objs = append(objs, &list.Items[i])
			}
			return objs
		}
	})
}
