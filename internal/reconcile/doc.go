// Package reconcile holds the machinery that every Windlass reconciler shares:
// the result of a reconcile step, the typed errors that say how a failure is
// reported and retried, and Summarize, the one place that turns a run's
// outcome into the kstatus conditions (Ready, Reconciling, Stalled), the
// observed generation and the controller-runtime result.
//
// Steps never set Ready, Reconciling or Stalled themselves: they set their
// kind's own conditions and return a Result and an error; Summarize does the
// rest.
package reconcile
