package devenv

import (
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kustomizev1 "github.com/windlass-dev/windlass/api/kustomize/v1"
	"github.com/windlass-dev/windlass/api/meta"
	"github.com/windlass-dev/windlass/internal/conditions"
)

// TestApplyOutcome: a commit is applied when Ready at it, failed when its
// run ended (or only a retry is under way) with Ready False, and still
// going while its run is under way, waits for something else, or another
// commit or generation is what the status says.
func TestApplyOutcome(t *testing.T) {
	const sha, old = "0123456789abcdef", "fedcba9876543210"
	type cond struct {
		status metav1.ConditionStatus
		reason string
	}
	tests := []struct {
		name               string
		attempted, applied string
		stale              bool
		ready, reconciling *cond
		want               outcome
	}{
		{name: "not reconciled yet", want: undecided},
		{name: "applied", attempted: sha, applied: sha, ready: &cond{metav1.ConditionTrue, meta.ReconciliationSucceededReason}, want: applied},
		{name: "build failed, nothing under way", attempted: sha, applied: old,
			ready: &cond{metav1.ConditionFalse, meta.BuildFailedReason}, want: failed},
		{name: "build failed, a retry under way", attempted: sha, applied: old,
			ready: &cond{metav1.ConditionFalse, meta.BuildFailedReason}, reconciling: &cond{metav1.ConditionTrue, meta.ProgressingWithRetryReason}, want: failed},
		{name: "waiting for a dependency", attempted: sha, applied: old,
			ready: &cond{metav1.ConditionFalse, meta.DependencyNotReadyReason}, reconciling: &cond{metav1.ConditionTrue, meta.DependencyNotReadyReason}, want: undecided},
		{name: "applying", attempted: sha, applied: old,
			ready: &cond{metav1.ConditionUnknown, meta.ProgressingReason}, reconciling: &cond{metav1.ConditionTrue, meta.ProgressingReason}, want: undecided},
		{name: "the previous commit failed", attempted: old, applied: old, ready: &cond{metav1.ConditionFalse, meta.BuildFailedReason}, want: undecided},
		{name: "a generation not observed yet", attempted: sha, applied: sha, stale: true,
			ready: &cond{metav1.ConditionTrue, meta.ReconciliationSucceededReason}, want: undecided},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			ks := &kustomizev1.Kustomization{ObjectMeta: metav1.ObjectMeta{Generation: 2}}
			ks.Status.ObservedGeneration = 2
			if tt.stale {
				ks.Status.ObservedGeneration = 1
			}
			if tt.attempted != "" {
				ks.Status.LastAttemptedRevision = "main@sha1:" + tt.attempted
				ks.Status.LastAppliedRevision = "main@sha1:" + tt.applied
			}
			if tt.ready != nil {
				conditions.Set(ks, meta.ReadyCondition, tt.ready.status, tt.ready.reason, "the message")
			}
			if tt.reconciling != nil {
				conditions.Set(ks, meta.ReconcilingCondition, tt.reconciling.status, tt.reconciling.reason, "under way")
			}
			got, message := applyOutcome(ks, sha)
			g.Expect(got).To(Equal(tt.want))
			if tt.ready != nil {
				g.Expect(message).To(Equal("the message"))
			}
		})
	}
}
