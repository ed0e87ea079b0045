package reconcile

import (
	"errors"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/windlass-dev/windlass/api/meta"
	"github.com/windlass-dev/windlass/internal/conditions"
	"github.com/windlass-dev/windlass/internal/reconcile/outcome"
	"github.com/windlass-dev/windlass/internal/redact"
)

// ObjectWithStatus is an object that Summarize can write the outcome of a
// run to.
type ObjectWithStatus interface {
	conditions.Setter
	SetObservedGeneration(int64)
}

// Summary describes how to summarize one run of a kind's reconciler.
type Summary struct {
	// Result is the combined result of the steps that ran.
	Result outcome.Result
	// Err is the error the steps returned, if any.
	Err error
	// NegativeConditions are the kind's abnormal-true conditions, most
	// important first: the first that is True explains a Ready=False.
	// Stalled is never one of them: it is the outcome of a run, written by
	// Summarize, and a stale one must not explain a later failure.
	NegativeConditions []string
	// SuccessReason and SuccessMessage describe Ready=True.
	SuccessReason, SuccessMessage string
	// Interval is the time until the next scheduled run after a success.
	Interval time.Duration
	// JitterPercent spreads the interval; zero means DefaultJitterPercent.
	JitterPercent int
}

// Summarize writes the outcome of a run to obj's conditions and observed
// generation, and returns what controller-runtime should do next (its error
// carries no credentials, since controller-runtime logs it):
//
//   - Stalling: Stalled=True and Ready=False; a terminal error, no retry.
//   - Waiting: Ready=False and Reconciling=True, both with the reason of
//     what the object waits for (a source, a dependency): kstatus
//     InProgress, not a failure; requeue after the wait.
//   - Progressing: Ready=Unknown and Reconciling=True; requeue after the
//     delay it gives.
//   - Holding: Ready, Stalled and the observed generation are left as the
//     last run that worked wrote them (Ready=False with the hold's reason
//     when there was none), or Ready=True as for a success when the held
//     run restored what it serves (Holding.Restored) and nothing negative
//     holds; Reconciling goes when Ready is True, so that they never
//     contradict; requeue after the hold's delay, jittered.
//   - any other error: Ready=False and Reconciling=True with the reason
//     ProgressingWithRetry, which is how a failure is told from a wait;
//     the error is returned, for the runner to record, log and retry
//     with backoff, or after the Failure's RetryAfter.
//   - success: Ready=True (or False when a negative condition still holds)
//     and the next run after the jittered interval.
func Summarize(obj ObjectWithStatus, s Summary) (ctrl.Result, error) {
	var (
		stalling    *outcome.Stalling
		waiting     *outcome.Waiting
		progressing *outcome.Progressing
		holding     *outcome.Holding
	)
	switch {
	case errors.As(s.Err, &holding):
		switch {
		case holding.Restored && !conditions.IsTrue(obj, meta.StalledCondition) && firstTrue(obj, s.NegativeConditions) == "":
			conditions.MarkTrue(obj, meta.ReadyCondition, s.SuccessReason, "%s", s.SuccessMessage)
		case conditions.Get(obj, meta.ReadyCondition) == nil:
			conditions.MarkFalse(obj, meta.ReadyCondition, holding.Reason, "%s", holding.Err.Error())
		}
		if conditions.IsTrue(obj, meta.ReadyCondition) {
			conditions.Delete(obj, meta.ReconcilingCondition)
		}
		return ctrl.Result{RequeueAfter: Jitter(holding.RequeueAfter, jitterPercent(s.JitterPercent))}, nil
	case errors.As(s.Err, &stalling):
		conditions.MarkTrue(obj, meta.StalledCondition, stalling.Reason, "%s", stalling.Err.Error())
		conditions.Delete(obj, meta.ReconcilingCondition)
		conditions.MarkFalse(obj, meta.ReadyCondition, stalling.Reason, "%s", stalling.Err.Error())
		obj.SetObservedGeneration(obj.GetGeneration())
		return ctrl.Result{}, reconcile.TerminalError(redact.Error(s.Err))
	case errors.As(s.Err, &waiting):
		conditions.Delete(obj, meta.StalledCondition)
		reason := waitingReason(waiting)
		conditions.MarkTrue(obj, meta.ReconcilingCondition, reason, "%s", waiting.Err.Error())
		conditions.MarkFalse(obj, meta.ReadyCondition, reason, "%s", waiting.Err.Error())
		return ctrl.Result{RequeueAfter: waiting.RequeueAfter}, nil
	case errors.As(s.Err, &progressing):
		conditions.Delete(obj, meta.StalledCondition)
		conditions.MarkTrue(obj, meta.ReconcilingCondition, meta.ProgressingReason, "%s", progressing.Err.Error())
		conditions.MarkUnknown(obj, meta.ReadyCondition, progressing.Reason, "%s", progressing.Err.Error())
		return ctrl.Result{RequeueAfter: progressing.RequeueAfter}, nil
	case s.Err != nil:
		reason := outcome.ReasonOf(s.Err, negativeReason(obj, s.NegativeConditions, meta.FailedReason))
		conditions.Delete(obj, meta.StalledCondition)
		conditions.MarkTrue(obj, meta.ReconcilingCondition, meta.ProgressingWithRetryReason, "retrying after failure: %s", s.Err.Error())
		conditions.MarkFalse(obj, meta.ReadyCondition, reason, "%s", s.Err.Error())
		return ctrl.Result{}, redact.Error(s.Err)
	}

	conditions.Delete(obj, meta.StalledCondition)
	conditions.Delete(obj, meta.ReconcilingCondition)
	if c := firstTrue(obj, s.NegativeConditions); c != "" {
		conditions.MarkFalse(obj, meta.ReadyCondition, conditions.Reason(obj, c), "%s", conditions.Message(obj, c))
	} else {
		conditions.MarkTrue(obj, meta.ReadyCondition, s.SuccessReason, "%s", s.SuccessMessage)
	}
	obj.SetObservedGeneration(obj.GetGeneration())
	if s.Result == outcome.ResultRequeue {
		return ctrl.Result{RequeueAfter: time.Second}, nil
	}
	return ctrl.Result{RequeueAfter: Jitter(s.Interval, jitterPercent(s.JitterPercent))}, nil
}

// Failing tells whether obj's status says that its last run failed:
// Ready=False for any reason but a wait, which Summarize marks with
// Reconciling=True and a reason of its own (a failure's is
// ProgressingWithRetry). An object that waited, for its source's first
// artifact say, and is then Ready did not recover from anything.
func Failing(obj conditions.Getter) bool {
	return conditions.IsFalse(obj, meta.ReadyCondition) && !conditions.InProgress(obj)
}

// waitingReason is the reason of a wait: its own, or WaitingReason when
// it gives none (never ProgressingWithRetry, which marks a failure).
func waitingReason(w *outcome.Waiting) string {
	if w.Reason == "" || w.Reason == meta.ProgressingWithRetryReason {
		return outcome.WaitingReason
	}
	return w.Reason
}

// retryAfter is the fixed delay a Failure asks to be retried after, or
// zero for the usual backoff.
func retryAfter(err error) time.Duration {
	var f *outcome.Failure
	if errors.As(err, &f) {
		return f.RetryAfter
	}
	return 0
}

// jitterPercent returns percent, or DefaultJitterPercent for zero.
func jitterPercent(percent int) int {
	if percent == 0 {
		return DefaultJitterPercent
	}
	return percent
}

func firstTrue(obj conditions.Getter, types []string) string {
	for _, t := range types {
		if t != meta.StalledCondition && conditions.IsTrue(obj, t) {
			return t
		}
	}
	return ""
}

func negativeReason(obj conditions.Getter, types []string, fallback string) string {
	if c := firstTrue(obj, types); c != "" {
		return conditions.Reason(obj, c)
	}
	return fallback
}

// MarkProgress tells users what a run is doing while it goes on: it sets
// Reconciling=True with the reason Progressing. It is the one way a step
// touches Reconciling; Summarize writes the final Ready, Reconciling and
// Stalled.
func MarkProgress(obj conditions.Setter, format string, args ...any) {
	conditions.MarkTrue(obj, meta.ReconcilingCondition, meta.ProgressingReason, format, args...)
}
