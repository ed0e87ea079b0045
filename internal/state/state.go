// Package state tells where an object of a Windlass kind stands, in the
// words a user reads: Ready, Progressing, Failing, Stalled, Held by a gate,
// Suspended, or Static for the kinds without a status. The web UI shows
// it; the metrics count objects by it.
package state

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/windlass-dev/windlass/api/meta"
	"github.com/windlass-dev/windlass/internal/conditions"
)

// State is where an object stands.
type State string

// The states, in the order the UI shows them.
const (
	// Ready: the last reconciliation succeeded.
	Ready State = "Ready"
	// Progressing: a reconciliation is under way, or waits for something
	// else (a source, a dependency).
	Progressing State = "Progressing"
	// Failing: the last reconciliation failed; it is retried.
	Failing State = "Failing"
	// Stalled: the spec cannot work until it changes.
	Stalled State = "Stalled"
	// Held: a closed gate holds the object back.
	Held State = "Held"
	// Suspended: spec.suspend stops its reconciliations.
	Suspended State = "Suspended"
	// Static: the kind has no status (Alerts, Providers).
	Static State = "Static"
)

// All are every State, in the order the UI shows them.
var All = []State{Ready, Progressing, Failing, Stalled, Held, Suspended, Static}

// Object is an object of a Windlass kind.
type Object interface {
	client.Object
	conditions.Getter
	IsSuspended() bool
}

// Of returns where obj stands; static says its kind has no status.
func Of(obj Object, static bool) State {
	switch {
	case static:
		return Static
	case obj.IsSuspended():
		return Suspended
	case conditions.IsTrue(obj, meta.StalledCondition):
		return Stalled
	case conditions.HeldByGate(obj, obj.GetGeneration()) != "":
		return Held
	}
	ready := conditions.Get(obj, meta.ReadyCondition)
	switch {
	case ready == nil || ready.Status == metav1.ConditionUnknown:
		return Progressing
	case ready.Status == metav1.ConditionTrue:
		return Ready
	case waiting(obj):
		return Progressing
	}
	return Failing
}

// waiting reports whether obj, not Ready, is in progress rather than
// failed: Reconciling=True for another reason than a retry (it waits for
// a source or a dependency, or works).
func waiting(obj conditions.Getter) bool {
	r := conditions.Get(obj, meta.ReconcilingCondition)
	return r != nil && r.Status == metav1.ConditionTrue && r.Reason != meta.ProgressingWithRetryReason
}
