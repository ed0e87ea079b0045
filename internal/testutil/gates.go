package testutil

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	gatingv1alpha1 "github.com/windlass-dev/windlass/api/gating/v1alpha1"
	"github.com/windlass-dev/windlass/api/meta"
	"github.com/windlass-dev/windlass/internal/conditions"
)

// Gate returns the Gate ns/name, open or closed as the gating controller
// decides it (its Opened condition), for a fake client or a step test.
func Gate(ns, name string, opened bool) *gatingv1alpha1.Gate {
	gt := &gatingv1alpha1.Gate{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	MarkGate(gt, opened)
	return gt
}

// MarkGate sets gt's Opened condition as the gating controller would.
func MarkGate(gt *gatingv1alpha1.Gate, opened bool) {
	if opened {
		conditions.MarkTrue(gt, gatingv1alpha1.OpenedCondition, meta.SucceededReason, "Gate is open")
	} else {
		conditions.MarkFalse(gt, gatingv1alpha1.OpenedCondition, meta.SucceededReason, "Gate is closed")
	}
}
