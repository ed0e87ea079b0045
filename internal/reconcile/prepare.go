package reconcile

import (
	"context"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/windlass-dev/windlass/api/meta"
	"github.com/windlass-dev/windlass/internal/conditions"
	"github.com/windlass-dev/windlass/internal/metrics"
	"github.com/windlass-dev/windlass/internal/patch"
)

// Reconcilable is an object that a Windlass reconciler prepares and
// summarizes.
type Reconcilable interface {
	ObjectWithStatus
	GetObservedGeneration() int64
	SetLastHandledReconcileRequest(token string)
}

// Prepare does what every reconciler does before its steps: it adds the
// finalizer, records whether the object is suspended, echoes the reconcile
// request token and marks a new generation as Reconciling, patching at once
// so that users see the work start. It returns false when the object is
// suspended and nothing more should be done.
func Prepare(ctx context.Context, kind string, obj Reconcilable, suspended bool, patcher *patch.Helper) (bool, error) {
	if !controllerutil.ContainsFinalizer(obj, meta.Finalizer) {
		controllerutil.AddFinalizer(obj, meta.Finalizer)
		if err := patcher.Patch(ctx, obj); err != nil {
			return false, err
		}
	}
	metrics.RecordSuspend(kind, obj, suspended)
	if suspended {
		ctrl.LoggerFrom(ctx).V(1).Info("Reconciliation is suspended for this object")
		return false, nil
	}
	if token, ok := meta.ReconcileAnnotationValue(obj.GetAnnotations()); ok {
		obj.SetLastHandledReconcileRequest(token)
	}
	if obj.GetGeneration() != obj.GetObservedGeneration() {
		conditions.MarkTrue(obj, meta.ReconcilingCondition, meta.ProgressingReason,
			"processing object: new generation %d -> %d", obj.GetObservedGeneration(), obj.GetGeneration())
		if err := patcher.Patch(ctx, obj); err != nil {
			return false, err
		}
	}
	return true, nil
}
