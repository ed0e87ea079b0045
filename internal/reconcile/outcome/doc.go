// Package outcome holds what a step of a run returns: a Result, and the
// typed errors that say how a failure is reported and retried (Stall,
// Fail, Wait, Progress, Hold). It is the leaf of the reconcile tier:
// the runner (internal/reconcile) turns outcomes into status, and the
// shared steps beside it (gate, dependency, sourceref, gitsource) and every
// kind's steps return them, without importing the runner.
package outcome
