package kustomize

import (
	kustomizev1 "github.com/windlass-dev/windlass/api/kustomize/v1"
	"github.com/windlass-dev/windlass/internal/metrics"
	"github.com/windlass-dev/windlass/internal/ssa"
)

// recordApplied records in the applier metrics what changes did to the
// objects of a Kustomization: created, configured, deleted (pruned). When
// drift is set (see correctsDrift), what the apply created or configured
// was set back to the revision last applied, and counts as drift
// corrected too. changes may be nil, or partial when an apply or prune
// failed half-way: what was done is counted.
func recordApplied(changes *ssa.ChangeSet, drift bool) {
	if changes == nil {
		return
	}
	counts := map[ssa.Action]int{}
	for _, c := range changes.Entries {
		counts[c.Action]++
	}
	kind := kustomizev1.KustomizationKind
	metrics.RecordApplied(kind, metrics.ActionCreated, counts[ssa.ActionCreated])
	metrics.RecordApplied(kind, metrics.ActionConfigured, counts[ssa.ActionConfigured])
	metrics.RecordApplied(kind, metrics.ActionDeleted, counts[ssa.ActionDeleted])
	if drift {
		metrics.RecordDriftCorrected(kind, counts[ssa.ActionCreated]+counts[ssa.ActionConfigured])
	}
}

// correctsDrift reports whether a run that applies revision from inputs
// (buildInputs.digest) sets objects back rather than changing them: it
// applies the revision last applied, for a spec that a run completed (the
// observed generation) and, when the last complete apply is remembered
// (last, hadLast), from the same inputs, so that a change of the
// substitution variables or decryption keys is not drift. A restart
// forgets the inputs: the revision and generation decide then.
func correctsDrift(obj *kustomizev1.Kustomization, revision, inputs string, last appliedState, hadLast bool) bool {
	if revision != obj.Status.LastAppliedRevision || obj.Status.ObservedGeneration != obj.Generation {
		return false
	}
	return !hadLast || last.inputs == inputs
}
