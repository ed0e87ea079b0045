// Package gating holds the reconciler of Gates (gating.toolkit.fluxcd.io):
// it decides each gate's state with internal/reconcile/gate, writes it to the Opened
// condition with the request in force and the next transition, records an
// event on every transition naming its cause, and evaluates the gate again
// exactly when its state is due to change.
package gating
