package reconcile

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/windlass-dev/windlass/api/meta"
	"github.com/windlass-dev/windlass/internal/conditions"
	"github.com/windlass-dev/windlass/internal/event"
	"github.com/windlass-dev/windlass/internal/kinds"
	"github.com/windlass-dev/windlass/internal/metrics"
	"github.com/windlass-dev/windlass/internal/parallel"
	"github.com/windlass-dev/windlass/internal/patch"
	"github.com/windlass-dev/windlass/internal/reconcile/outcome"
	"github.com/windlass-dev/windlass/internal/redact"
	"github.com/windlass-dev/windlass/internal/state"
)

// Object is an object of a Windlass kind: what the Runner reconciles.
type Object interface {
	Reconcilable
	// IsSuspended reports whether spec.suspend is set.
	IsSuspended() bool
	// GetRequeueAfter returns spec.interval.
	GetRequeueAfter() time.Duration
}

// Kind is what the Runner needs to know of one kind: a small value, plus
// the steps that Run runs.
type Kind[T Object] struct {
	// Name is the kind's name, such as "GitRepository", for metrics.
	Name string
	// New returns an empty object of the kind.
	New func() T
	// NegativeConditions are the kind's abnormal-true conditions (never
	// Stalled), most important first: the first that is True explains a
	// Ready=False.
	NegativeConditions []string
	// SuccessReason is the reason of Ready=True.
	SuccessReason string
	// SuccessMessage returns the message of Ready=True.
	SuccessMessage func(obj T) string
	// Revision, when set, returns the revision an object's events concern
	// (the one the run attempted), for forwarders.
	Revision func(obj T) string
	// CheckSpec, when set, stalls an object whose spec no retry can make
	// work, or asks for what the schema accepts but Windlass does not
	// serve, naming the value: it runs first, before the gates, and reads
	// nothing.
	CheckSpec func(obj T) error
	// GateRequeue, when set, returns how soon an object held by a gate
	// looks at its gates again; nil is spec.interval. (A gate that opens
	// or closes reconciles its consumers at once anyway.)
	GateRequeue func(obj T) time.Duration
	// Held, when set, is called when a gate holds a run back, with the
	// Hold error, and returns what the run ends with.
	Held func(ctx context.Context, obj T, held error) error
	// SourceRef, when set, declares the source whose artifact the objects
	// use: see Runner.Setup.
	SourceRef *SourceRef[T]
	// Run does the work of one run, usually RunSteps over the kind's
	// steps. patcher may be used to write the status ahead of the end of
	// the run (an inventory before applying, say).
	Run func(ctx context.Context, obj T, patcher *patch.Helper) (outcome.Result, error)
	// Finalize does what must be done before the finalizer of a deleted
	// object is removed; an error keeps the finalizer and is retried with
	// backoff. Only the kinds the registry marks Finalized get the
	// finalizer (and may have a Finalize); an object of another kind that
	// still carries it (added before) has it removed. Nil means nothing.
	Finalize func(ctx context.Context, obj T) error
	// Forget drops what the reconciler keeps in memory about an object
	// that is deleted or gone, or that another replica now holds. Nil
	// means nothing.
	Forget func(key types.NamespacedName)
	// Gone removes what the reconciler stored for an object that is gone
	// (deleted, or out of what this process watches), after Forget: the
	// cleanup of a kind that carries no finalizer. Nil means nothing.
	Gone func(ctx context.Context, key types.NamespacedName)
	// RetryInterval, when set, gives the fixed interval after which a
	// failed run is retried; nil means exponential backoff.
	RetryInterval func(obj T) time.Duration
	// Summarized, when set, is called after the outcome is written to the
	// status and before the status is patched: it may record the outcome
	// (a history) and change the result (its priority).
	Summarized func(ctx context.Context, obj T, o *Outcome)
	// RecheckedFields are the top-level status fields that every run sets
	// again from what it observes. A run that ends with a quiet
	// Progressing error (see Progressing.Quiet) and changed only these
	// fields writes no status: the recheck soon after writes it.
	RecheckedFields []string
}

// Outcome is how a run ended, for Kind.Summarized.
type Outcome struct {
	// Err is the error the run returned.
	Err error
	// Started is when the run began.
	Started time.Time
	// Result is what controller-runtime will be told; Summarized may
	// change it.
	Result ctrl.Result
	// Unchanged tells whether the object is as its status and metadata
	// were last written, so that the patch at the end of the run would
	// send nothing: what Summarized may leave unwritten.
	Unchanged func() bool
}

// Runner is the Reconcile of every Windlass kind: get, forget when gone,
// finalize when deleted, add the finalizer, skip when suspended, admit
// (the kind's CheckSpec, then its gates), run the
// kind's steps, then summarize the outcome into the status, record a
// warning for a failure and patch, whatever happened in between.
type Runner[T Object] struct {
	// Client reads and patches the objects.
	Client client.Client
	// Events records events about the objects.
	Events *event.Recorder
	// JitterPercent spreads each object's interval; zero means
	// DefaultJitterPercent.
	JitterPercent int
	// NoCrossNamespaceRefs refuses gates in another namespace.
	NoCrossNamespaceRefs bool
	// Kind is the kind reconciled.
	Kind Kind[T]

	// sharder, set by Setup when the replicas share the objects, tells
	// which this replica reconciles.
	sharder Sharder
	// writes keeps the version each object's last run left it at, by
	// which a run tells a cache that has not yet seen that run's writes.
	writes ownWrites
	// quietlyWaited holds the objects whose first run waited quietly.
	quietlyWaited sync.Map // types.NamespacedName -> struct{}
}

// cacheCatchUp is how soon a run that found the cache behind the last
// run's own writes looks again: the informer's watch usually brings the
// write within milliseconds.
const cacheCatchUp = 50 * time.Millisecond

// NormalPriority is the work-queue priority of a run that asks for none:
// the queue would otherwise keep the priority the run came in with.
const NormalPriority = 0

// Reconcile reconciles the object of req.
func (r *Runner[T]) Reconcile(ctx context.Context, req ctrl.Request) (result ctrl.Result, retErr error) {
	defer func() {
		if result.Priority == nil {
			result.Priority = ptr.To(NormalPriority)
		}
	}()
	start := time.Now()
	ctx = event.WithRun(ctx)
	obj := r.Kind.New()
	if err := r.Client.Get(ctx, req.NamespacedName, obj); err != nil {
		if apierrors.IsNotFound(err) {
			r.forget(req.NamespacedName)
			if r.Kind.Gone != nil {
				r.Kind.Gone(ctx, req.NamespacedName)
			}
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if r.writes.behind(req.NamespacedName, obj.GetResourceVersion()) {
		ctrl.LoggerFrom(ctx).V(1).Info("The cache has not seen the last run's writes yet", "resourceVersion", obj.GetResourceVersion())
		return ctrl.Result{RequeueAfter: cacheCatchUp}, nil
	}
	if r.sharder != nil {
		done, err := r.sharder.Hold(ctx, r.Client, r.Kind.Name, obj)
		if done == nil {
			if err == nil {
				r.forget(req.NamespacedName)
			}
			return ctrl.Result{}, err
		}
		defer done()
	}
	if !obj.GetDeletionTimestamp().IsZero() {
		// A deleted object's series are forgotten, not observed again.
		return ctrl.Result{}, r.finalize(ctx, obj)
	}
	defer metrics.RecordDuration(r.Kind.Name, obj, start)
	patcher := patch.NewHelper(obj, r.Client)
	defer func() { r.writes.record(req.NamespacedName, patcher.Written()) }()
	wasFailing := Failing(obj) // before Prepare marks a new generation Reconciling
	// A new object may wait quietly (and any object, for a wait that
	// keeps its status), unless someone asked for this run and waits for
	// the status to say it was handled (see handlesRequest).
	isNew := conditions.Get(obj, meta.ReadyCondition) == nil
	if proceed, err := Prepare(ctx, r.Kind.Name, obj, kinds.Finalized(r.Kind.Name), obj.IsSuspended(), patcher); !proceed {
		return ctrl.Result{}, err
	}
	var res outcome.Result
	defer func() {
		if w := outcome.QuietWait(retErr); w != nil && (isNew || w.KeepsStatus) && !r.handlesRequest(ctx, obj, patcher) &&
			r.firstQuietWait(req.NamespacedName) {
			ctrl.LoggerFrom(ctx).V(1).Info("Waiting quietly: the status stays as it is", "for", w.Err.Error())
			result, retErr = ctrl.Result{RequeueAfter: w.RequeueAfter}, nil
			return
		}
		result, retErr = r.SummarizeAndPatch(ctx, obj, patcher, res, retErr, start)
		metrics.RecordRun(r.Kind.Name, obj, state.Of(obj, false), time.Now())
		if wasFailing && retErr == nil && conditions.IsTrue(obj, meta.ReadyCondition) {
			r.recovered(ctx, obj)
		}
	}()
	res, retErr = r.run(ctx, obj, patcher)
	return ctrl.Result{}, retErr
}

// handlesRequest tells whether the run handles a reconcile request not
// handled before (Prepare echoed a new token into the status), which only
// a status write can say: a request handled long ago, whose annotation
// stays on the object, is none.
func (r *Runner[T]) handlesRequest(ctx context.Context, obj T, patcher *patch.Helper) bool {
	fields, _, err := patcher.Changes(obj)
	if err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Comparing the status with the last one written")
		return true
	}
	return slices.Contains(fields, "lastHandledReconcileAt")
}

// firstQuietWait tells whether this is the first quiet wait (see
// outcome.Waiting.Quiet) of the object key in this process: that run of
// an object with no status yet writes none, the next one does.
func (r *Runner[T]) firstQuietWait(key types.NamespacedName) bool {
	_, waited := r.quietlyWaited.LoadOrStore(key, struct{}{})
	return !waited
}

// recovered records that obj is Ready again after a run that found it
// failing (Failing): a Normal event with the Ready condition's reason and
// message, by which alerts tell the providers that got the failure that
// it is resolved.
func (r *Runner[T]) recovered(ctx context.Context, obj T) {
	r.Events.Normal(ctx, obj, conditions.Reason(obj, meta.ReadyCondition), r.revision(obj), conditions.Message(obj, meta.ReadyCondition))
}

// run admits obj (Admit), then runs the kind's work. A panic in it, on
// tenant data no test foresaw, fails this object only, as a retried
// failure that its status reports, with the stack in the log.
func (r *Runner[T]) run(ctx context.Context, obj T, patcher *patch.Helper) (outcome.Result, error) {
	res, err := guard(ctx, func() (outcome.Result, error) {
		if err := r.Admit(ctx, obj); err != nil {
			return outcome.ResultEmpty, err
		}
		return r.Kind.Run(ctx, obj, patcher)
	})
	var panicked *parallel.PanicError
	if errors.As(err, &panicked) {
		return outcome.ResultEmpty, outcome.Fail(meta.FailedReason, fmt.Errorf("reconciliation %w", panicked))
	}
	return res, err
}

// SummarizeAndPatch writes the outcome of a run that began at start to the
// status, records a warning for a failure, and patches the object: the end
// of every run, exported so that a kind can test its hooks step by step.
func (r *Runner[T]) SummarizeAndPatch(ctx context.Context, obj T, patcher *patch.Helper,
	res outcome.Result, runErr error, start time.Time) (ctrl.Result, error) {
	summary := Summary{
		Result:             res,
		Err:                runErr,
		NegativeConditions: r.Kind.NegativeConditions,
		SuccessReason:      r.Kind.SuccessReason,
		Interval:           obj.GetRequeueAfter(),
		JitterPercent:      r.JitterPercent,
	}
	if r.Kind.SuccessMessage != nil {
		summary.SuccessMessage = r.Kind.SuccessMessage(obj)
	}
	result, err := Summarize(obj, summary)
	ended := &Outcome{Err: runErr, Started: start, Result: result, Unchanged: func() bool {
		fields, others, err := patcher.Changes(obj)
		return err == nil && !others && len(fields) == 0
	}}
	if r.Kind.Summarized != nil {
		r.Kind.Summarized(ctx, obj, ended)
	}
	result = ended.Result
	if outcome.IsQuiet(runErr) && r.onlyRecheckedFieldsChanged(ctx, obj, patcher) {
		return result, nil
	}
	if err != nil {
		r.Events.Warning(ctx, obj, conditions.Reason(obj, meta.ReadyCondition), r.revision(obj), conditions.Message(obj, meta.ReadyCondition))
		retry := retryAfter(runErr)
		if retry == 0 {
			retry = r.retryInterval(obj)
		}
		if retry > 0 && !IsTerminal(err) {
			// controller-runtime forgets the backoff of an item whose
			// result has a RequeueAfter and no error: the retry comes
			// after the failure's or the kind's delay, and the failure is
			// logged here.
			ctrl.LoggerFrom(ctx).Error(err, "Reconciliation failed, retrying after the retry interval")
			result.RequeueAfter = retry
			err = nil
		}
	}
	if patchErr := patcher.Patch(ctx, obj); patchErr != nil {
		ctrl.LoggerFrom(ctx).Error(patchErr, "Failed to patch the status")
		if err == nil {
			err = patchErr
		}
	}
	if err != nil {
		// controller-runtime ignores RequeueAfter with an error, and says
		// so: an error is retried with backoff.
		result.RequeueAfter = 0
	}
	return result, err
}

// onlyRecheckedFieldsChanged reports whether the changes to obj that
// patcher would send are all in the kind's RecheckedFields.
func (r *Runner[T]) onlyRecheckedFieldsChanged(ctx context.Context, obj T, patcher *patch.Helper) bool {
	if len(r.Kind.RecheckedFields) == 0 {
		return false
	}
	fields, others, err := patcher.Changes(obj)
	if err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Comparing the status with the last one written")
		return false
	}
	if others {
		return false
	}
	for _, f := range fields {
		if !containsString(r.Kind.RecheckedFields, f) {
			return false
		}
	}
	return true
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// finalize runs the kind's Finalize for a deleted object, then forgets it
// and removes the finalizer. A failure keeps the finalizer, is recorded as
// a warning and is retried with backoff.
func (r *Runner[T]) finalize(ctx context.Context, obj T) error {
	if !controllerutil.ContainsFinalizer(obj, meta.Finalizer) {
		return nil
	}
	if r.Kind.Finalize != nil {
		if err := r.Kind.Finalize(ctx, obj); err != nil {
			r.Events.Warning(ctx, obj, outcome.ReasonOf(err, meta.FailedReason), r.revision(obj), err.Error())
			return redact.Error(err)
		}
	}
	r.forget(client.ObjectKeyFromObject(obj))
	patcher := patch.NewHelper(obj, r.Client)
	controllerutil.RemoveFinalizer(obj, meta.Finalizer)
	return patcher.Patch(ctx, obj)
}

// retryInterval returns the kind's fixed retry interval for obj, or zero
// for backoff (also when the kind's interval is zero: a failure must come
// back).
func (r *Runner[T]) retryInterval(obj T) time.Duration {
	if r.Kind.RetryInterval == nil {
		return 0
	}
	return r.Kind.RetryInterval(obj)
}

func (r *Runner[T]) revision(obj T) string {
	if r.Kind.Revision == nil {
		return ""
	}
	return r.Kind.Revision(obj)
}

// forget drops what the process keeps of the deleted object key: its
// metric series and the kind's own state.
func (r *Runner[T]) forget(key types.NamespacedName) {
	r.writes.forget(key)
	r.quietlyWaited.Delete(key)
	metrics.Forget(r.Kind.Name, key)
	if r.Kind.Forget != nil {
		r.Kind.Forget(key)
	}
}

// IsTerminal reports whether err is a terminal error: one that no retry
// mends.
func IsTerminal(err error) bool {
	return errors.Is(err, reconcile.TerminalError(nil))
}
