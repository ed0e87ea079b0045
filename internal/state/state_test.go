package state

import (
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kustomizev1 "github.com/windlass-dev/windlass/api/kustomize/v1"
	"github.com/windlass-dev/windlass/api/meta"
)

// cond returns a condition of generation 1.
func cond(t string, status metav1.ConditionStatus, reason, msg string) metav1.Condition {
	return metav1.Condition{Type: t, Status: status, Reason: reason, Message: msg, ObservedGeneration: 1}
}

func TestOf(t *testing.T) {
	ks := func(suspend bool, cs ...metav1.Condition) *kustomizev1.Kustomization {
		k := &kustomizev1.Kustomization{ObjectMeta: metav1.ObjectMeta{Generation: 1}}
		k.Spec.Suspend, k.Status.Conditions = suspend, cs
		return k
	}
	for _, tc := range []struct {
		name   string
		obj    Object
		static bool
		want   State
	}{
		{"no conditions yet", ks(false), false, Progressing},
		{"ready", ks(false, cond(meta.ReadyCondition, "True", "Succeeded", "")), false, Ready},
		{"failed, retried", ks(false, cond(meta.ReadyCondition, "False", "BuildFailed", "x"),
			cond(meta.ReconcilingCondition, "True", meta.ProgressingWithRetryReason, "")), false, Failing},
		{"failed", ks(false, cond(meta.ReadyCondition, "False", "BuildFailed", "x")), false, Failing},
		{"waiting for its source", ks(false, cond(meta.ReadyCondition, "False", "ArtifactFailed", "x"),
			cond(meta.ReconcilingCondition, "True", "ArtifactFailed", "")), false, Progressing},
		{"stalled", ks(false, cond(meta.ReadyCondition, "False", "InvalidCEL", "x"), cond(meta.StalledCondition, "True", "InvalidCEL", "")), false, Stalled},
		{"held", ks(false, cond(meta.ReadyCondition, "True", "Succeeded", ""),
			cond(meta.ApprovedCondition, "False", meta.GateClosedReason, "gate ops/freeze is closed")), false, Held},
		{"suspended", ks(true, cond(meta.ReadyCondition, "False", "BuildFailed", "x")), false, Suspended},
		{"a kind without status", ks(false), true, Static},
	} {
		t.Run(tc.name, func(t *testing.T) {
			NewWithT(t).Expect(Of(tc.obj, tc.static)).To(Equal(tc.want))
		})
	}
}
