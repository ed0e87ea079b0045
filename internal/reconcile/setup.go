package reconcile

import (
	"context"

	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	ctrlreconcile "sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/windlass-dev/windlass/internal/predicates"
)

// ControllerOptions tune the controller of one kind.
type ControllerOptions struct {
	// MaxConcurrentReconciles is how many objects are reconciled at once.
	MaxConcurrentReconciles int
	// RateLimiter spaces the retries of failed reconciliations.
	RateLimiter workqueue.TypedRateLimiter[ctrlreconcile.Request]
	// Sharder, when set, decides which objects this replica reconciles:
	// the replicas share them (windlass controller --shards=auto).
	Sharder Sharder
	// ArtifactsStoredAgain, when set, returns the events of the sources of
	// a kind whose artifacts a source controller of this process built
	// again, as another replica had stored them, under the same URL (see
	// artifact.Storage.OnStoredAgain): no status changes, so these events
	// wake the consumers that waited for them.
	ArtifactsStoredAgain func(kind string) <-chan event.GenericEvent
}

// Sharder decides which objects this replica reconciles when several
// replicas share them (internal/shard).
type Sharder interface {
	// Hold returns, when this replica reconciles obj now, the function
	// that the run calls when it ends; nil otherwise. The runner asks it
	// from the worker of obj, before anything else: a replica hands
	// objects over to another only when none of their runs is under way.
	Hold(ctx context.Context, c client.Client, kind string, obj client.Object) (func(), error)
	// Moved returns the source of the requests that ask the controller of
	// kind to reconcile objects this replica has come to hold, or no
	// longer holds (their runs forget them).
	Moved(kind string) source.Source
	// Mine passes the events of the objects this replica holds, or held
	// before the change.
	Mine() predicate.Predicate
	// Moves passes the changes that may change who holds an object.
	Moves() predicate.Predicate
}

// NewControllerManagedBy starts the controller of a kind whose objects are
// like obj: it reconciles them when their generation changes or a
// reconcile is requested (reconcile.fluxcd.io/requestedAt), with opts.
// With a Sharder, it reconciles only the objects this replica holds, and
// those whose holder changes. Its work queue is controller-runtime's
// priority queue (see stop_test.go). The kind adds its watches and calls
// Complete.
func NewControllerManagedBy(mgr ctrl.Manager, obj client.Object, opts ControllerOptions) *builder.Builder {
	var wakes predicate.Predicate = predicate.Or(predicate.GenerationChangedPredicate{}, predicates.ReconcileRequested{})
	if opts.Sharder != nil {
		wakes = predicate.And(opts.Sharder.Mine(), predicate.Or(wakes, opts.Sharder.Moves()))
	}
	return ctrl.NewControllerManagedBy(mgr).
		For(obj, builder.WithPredicates(wakes)).
		WithOptions(controller.Options{
			MaxConcurrentReconciles: opts.MaxConcurrentReconciles,
			RateLimiter:             opts.RateLimiter,
			// The runner recovers the kind's work; this covers the rest.
			RecoverPanic: ptr.To(true),
		})
}

// OnStop returns what a reconciler adds to its manager so that stop runs
// when the manager stops: what it keeps on disk (extracted trees) goes
// with the process.
func OnStop(stop func()) manager.Runnable {
	return manager.RunnableFunc(func(ctx context.Context) error {
		<-ctx.Done()
		stop()
		return nil
	})
}
