// Package reconcile holds the machinery that every Windlass reconciler
// shares: the Runner, and Summarize, the one place that turns a run's
// outcome (a step's Result and typed error, from internal/reconcile/outcome)
// into the kstatus conditions (Ready, Reconciling, Stalled), the observed
// generation and the controller-runtime result.
//
// Every kind reconciles through the Runner, configured by one Kind value:
// get, forget an object that is gone, finalize a deleted one, add the
// finalizer, skip a suspended one, admit it (Admit: the kind's CheckSpec,
// then its gates), run the kind's steps (RunSteps), then, in one deferred
// place, summarize the outcome into the status, record a warning for a
// failure and patch. Runner.Setup starts the kind's controller with the
// common predicates and options, and with the indexes and watches of what
// the kind declares: its gates and dependsOn in its row of internal/kinds,
// its SourceRef in the Kind value.
//
// The shared steps beside the runner (gate, dependency, sourceref,
// gitsource) return outcomes and never import the runner; domain packages
// (internal/<capability>) import none of this tier.
//
// The status rules, which conditions/check verifies in every envtest story:
//
//   - Steps never set Ready or Stalled: they set their kind's own conditions
//     and return a Result and an error. A step may say what a long run is
//     doing with MarkProgress (Reconciling=True); Summarize writes the final
//     Ready, Reconciling and Stalled from the run's outcome.
//   - Status is derived from what a run observes, not from the conditions of
//     earlier runs: a negative condition is set and cleared by the step that
//     owns it, and Stalled never explains a later failure.
//   - Ready, Reconciling and Stalled never contradict: Stalled=True means
//     Ready=False and no Reconciling; Reconciling=True means Ready is not
//     True; Ready=True means no negative condition is True.
//   - Every condition carries the generation it was written for (at most
//     metadata.generation), and status.observedGeneration is set when a run
//     reached an outcome for the generation.
//   - One writer per status: only the kind's own controller patches an
//     object's status (internal/patch sends merge patches that replace the
//     conditions whole, so a second writer would erase the first's). A
//     controller that judges another kind's object (a Gate, say) sets
//     conditions on its own object, never on the other's.
//   - Events go through internal/event: typed, redacted, never empty.
package reconcile
