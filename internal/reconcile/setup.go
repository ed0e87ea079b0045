package reconcile

import (
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	ctrlreconcile "sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/windlass-dev/windlass/internal/predicates"
)

// ControllerOptions tune the controller of one kind.
type ControllerOptions struct {
	// MaxConcurrentReconciles is how many objects are reconciled at once.
	MaxConcurrentReconciles int
	// RateLimiter spaces the retries of failed reconciliations.
	RateLimiter workqueue.TypedRateLimiter[ctrlreconcile.Request]
}

// NewControllerManagedBy starts the controller of a kind whose objects are
// like obj: it reconciles them when their generation changes or a
// reconcile is requested (reconcile.fluxcd.io/requestedAt), with opts.
// The kind adds its watches and calls Complete.
func NewControllerManagedBy(mgr ctrl.Manager, obj client.Object, opts ControllerOptions) *builder.Builder {
	return ctrl.NewControllerManagedBy(mgr).
		For(obj, builder.WithPredicates(
			predicate.Or(predicate.GenerationChangedPredicate{}, predicates.ReconcileRequested{}),
		)).
		WithOptions(controller.Options{
			MaxConcurrentReconciles: opts.MaxConcurrentReconciles,
			RateLimiter:             opts.RateLimiter,
			// The runner recovers the kind's work; this covers the rest.
			RecoverPanic: ptr.To(true),
		})
}
