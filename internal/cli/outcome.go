package cli

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/windlass-dev/windlass/api/meta"
	"github.com/windlass-dev/windlass/internal/conditions"
)

// readyDecided reports whether obj's Ready condition is decided for its
// current generation and no run is under way: True with the reconciliation
// over, or False for a failure (one the controller retries is decided too).
// An object that waits for something else (waitingFor) is not decided:
// waiting is progress, and the wait goes on.
func readyDecided(obj reconcilable) bool {
	ready := conditions.Get(obj, meta.ReadyCondition)
	if ready == nil || ready.ObservedGeneration != obj.GetGeneration() {
		return false
	}
	if waitingFor(obj, obj.GetGeneration()) != "" {
		return false
	}
	switch ready.Status {
	case metav1.ConditionTrue:
		return !conditions.IsTrue(obj, meta.ReconcilingCondition)
	case metav1.ConditionFalse:
		return !conditions.IsTrue(obj, meta.ReconcilingCondition) || conditions.Reason(obj, meta.ReconcilingCondition) == meta.ProgressingWithRetryReason
	}
	return false
}

// waitingFor says what obj, at generation, waits for, or "" when it waits
// for nothing: a gate that holds it back (Approved=False or Blocked=True,
// GateClosed), or something else its controller names in Reconciling
// (a source without an artifact, a dependency not Ready). Reconciling's
// Progressing (a run under way) and ProgressingWithRetry (a failure) are
// not waits.
func waitingFor(obj conditions.Getter, generation int64) string {
	if held := conditions.HeldByGate(obj, generation); held != "" {
		return "held back: " + held
	}
	r := conditions.Get(obj, meta.ReconcilingCondition)
	if r == nil || r.Status != metav1.ConditionTrue || r.ObservedGeneration != generation {
		return ""
	}
	switch r.Reason {
	case meta.ProgressingReason, meta.ProgressingWithRetryReason:
		return ""
	}
	return firstLine(r.Message)
}
