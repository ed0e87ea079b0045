package kustomize

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"

	kustomizev1 "github.com/windlass-dev/windlass/api/kustomize/v1"
	"github.com/windlass-dev/windlass/internal/gate"
	"github.com/windlass-dev/windlass/internal/reconcile"
)

// reconcileGates holds the run while a gate of spec.gates is closed or
// missing: nothing is read, built, applied, pruned or drift-corrected, and
// Ready keeps describing the last run. It comes first, after checkServed
// (which reads nothing), so an apply under way when a gate closes finishes
// first. Approved tells whether the
// gates let the object reconcile; an object without gates has none.
func (r *KustomizationReconciler) reconcileGates(ctx context.Context, obj *kustomizev1.Kustomization, _ *ksScope) (reconcile.Result, error) {
	err := gate.Enforce(ctx, r.Client, r.Events, obj, gate.Applier, r.NoCrossNamespaceRefs, obj.GetRequeueAfter())
	if err != nil {
		return reconcile.ResultEmpty, err
	}
	return reconcile.ResultSuccess, nil
}

// gateEvents returns the handler of the watch on Gates: a gate that opens,
// closes, appears or goes reconciles the Kustomizations behind it at once.
func (r *KustomizationReconciler) gateEvents() handler.EventHandler {
	return gate.EnqueueConsumers(r.Client, func() client.ObjectList { return &kustomizev1.KustomizationList{} })
}
