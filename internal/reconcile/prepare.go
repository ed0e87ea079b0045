package reconcile

import (
	"context"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/windlass-dev/windlass/api/meta"
	"github.com/windlass-dev/windlass/internal/conditions"
	"github.com/windlass-dev/windlass/internal/metrics"
	"github.com/windlass-dev/windlass/internal/parallel"
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
// finalizer to an object of a kind that has one (finalized; patching at
// once, so that nothing is created before it is there), records whether
// the object is suspended, echoes the reconcile request token and marks a
// new generation as Reconciling. It returns false when the object is
// suspended and nothing more should be done.
//
// The Reconciling condition is not patched here: a reconciler whose steps
// may take long calls AnnounceNewGeneration around them through
// AnnounceIfSlow, one that patches its status before it writes anything
// else lets that patch carry it.
func Prepare(ctx context.Context, kind string, obj Reconcilable, finalized, suspended bool, patcher *patch.Helper) (bool, error) {
	if finalized && !controllerutil.ContainsFinalizer(obj, meta.Finalizer) {
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
	}
	return true, nil
}

// AnnounceNewGeneration patches the status of an object whose generation
// is new, so that users see Reconciling=True while long steps run.
func AnnounceNewGeneration(ctx context.Context, obj Reconcilable, patcher *patch.Helper) error {
	if obj.GetGeneration() == obj.GetObservedGeneration() {
		return nil
	}
	return patcher.Patch(ctx, obj)
}

// AnnounceDelay is how long a step may run before AnnounceIfSlow announces
// it: most clones and builds end sooner, and their run then writes its
// status once.
const AnnounceDelay = time.Second

// AnnounceIfSlow runs work in its own goroutine and, when it has not ended
// after delay, calls announce (on the caller's goroutine, so that announce
// may read and patch the object, which work must not touch). A step that
// can take long thus shows in the status while it runs, and a short one
// costs no write of its own. An announcement that fails is logged: the run
// patches its status at the end anyway. Without announce, AnnounceIfSlow
// just runs work.
//
// A panic in work, which may handle data from outside such as a clone's
// packs, fails the step with an error that says so (a *parallel.PanicError,
// whose stack is logged) instead of ending the process.
func AnnounceIfSlow[T any](ctx context.Context, delay time.Duration, announce func(context.Context) error, work func() (T, error)) (T, error) {
	if announce == nil {
		return guard(ctx, work)
	}
	type outcome struct {
		value T
		err   error
	}
	done := make(chan outcome, 1)
	go func() {
		v, err := guard(ctx, work)
		done <- outcome{v, err}
	}()
	timer := time.NewTimer(delay)
	defer timer.Stop()
	select {
	case o := <-done:
		return o.value, o.err
	case <-timer.C:
	}
	if err := announce(ctx); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Failed to announce the reconciliation in the status")
	}
	o := <-done
	return o.value, o.err
}

// guard runs work and returns its panic, if any, as its error, with the
// zero value.
func guard[T any](ctx context.Context, work func() (T, error)) (T, error) {
	var v T
	var err error
	if p := parallel.Call(ctx, func() { v, err = work() }); p != nil {
		var zero T
		return zero, p
	}
	return v, err
}
