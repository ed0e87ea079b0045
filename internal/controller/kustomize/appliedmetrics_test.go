package kustomize

import (
	"testing"

	. "github.com/onsi/gomega"
	promtest "github.com/prometheus/client_golang/prometheus/testutil"

	kustomizev1 "github.com/windlass-dev/windlass/api/kustomize/v1"
	"github.com/windlass-dev/windlass/internal/metrics"
)

// The applier metrics are the process's, shared by every test of the
// package: the stories compare two readings and expect an increase, never
// a value.

// appliedObjects returns the objects that Kustomizations acted on with
// action (metrics.Action*) so far.
func appliedObjects(action string) float64 {
	return promtest.ToFloat64(metrics.AppliedObjects.WithLabelValues(kustomizev1.KustomizationKind, action))
}

// driftCorrected returns the objects whose drift Kustomizations corrected
// so far.
func driftCorrected() float64 {
	return promtest.ToFloat64(metrics.DriftCorrections.WithLabelValues(kustomizev1.KustomizationKind))
}

// TestCorrectsDrift: a run corrects drift when it applies the revision
// last applied, for the generation observed, from the inputs of the last
// complete apply when they are remembered.
func TestCorrectsDrift(t *testing.T) {
	const revision = "main@sha1:1111111111111111111111111111111111111111"
	applied := func(generation int64) *kustomizev1.Kustomization {
		obj := &kustomizev1.Kustomization{}
		obj.Generation = generation
		obj.Status.ObservedGeneration = 1
		obj.Status.LastAppliedRevision = revision
		return obj
	}
	last := appliedState{inputs: "inputs-1"}
	tests := []struct {
		name      string
		obj       *kustomizev1.Kustomization
		revision  string
		inputs    string
		hadLast   bool
		wantDrift bool
	}{
		{name: "same revision and inputs", obj: applied(1), revision: revision, inputs: "inputs-1", hadLast: true, wantDrift: true},
		{name: "same revision, nothing remembered (a restart)", obj: applied(1), revision: revision, inputs: "inputs-2", wantDrift: true},
		{name: "new revision", obj: applied(1), revision: "main@sha1:2222222222222222222222222222222222222222", inputs: "inputs-1", hadLast: true},
		{name: "new spec", obj: applied(2), revision: revision, inputs: "inputs-1", hadLast: true},
		{name: "new variables or keys", obj: applied(1), revision: revision, inputs: "inputs-2", hadLast: true},
		{name: "first apply", obj: &kustomizev1.Kustomization{}, revision: revision, inputs: "inputs-1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(correctsDrift(tt.obj, tt.revision, tt.inputs, last, tt.hadLast)).To(Equal(tt.wantDrift))
		})
	}
}
