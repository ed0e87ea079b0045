package check

import (
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/windlass-dev/windlass/api/meta"
	sourcev1 "github.com/windlass-dev/windlass/api/source/v1"
)

func TestStatus(t *testing.T) {
	cond := func(t string, s metav1.ConditionStatus, gen int64) metav1.Condition {
		return metav1.Condition{Type: t, Status: s, Reason: "R", Message: "m", ObservedGeneration: gen}
	}
	tests := []struct {
		name     string
		observed int64
		conds    []metav1.Condition
		writers  []string
		wantRule string
	}{
		{name: "ready", observed: 2, conds: []metav1.Condition{cond(meta.ReadyCondition, metav1.ConditionTrue, 2)}},
		{name: "not yet observed", observed: -1},
		{name: "observed generation ahead", observed: 3, wantRule: "STS001"},
		{name: "condition ahead", observed: 1, conds: []metav1.Condition{cond(meta.ReadyCondition, metav1.ConditionFalse, 3)}, wantRule: "STS002"},
		{name: "observed without Ready", observed: 2, wantRule: "STS003"},
		{name: "observed with an old Ready", observed: 2, conds: []metav1.Condition{cond(meta.ReadyCondition, metav1.ConditionTrue, 1)}, wantRule: "STS003"},
		{name: "stalled and ready", observed: 2, conds: []metav1.Condition{
			cond(meta.ReadyCondition, metav1.ConditionTrue, 2), cond(meta.StalledCondition, metav1.ConditionTrue, 2)}, wantRule: "STS004"},
		{name: "stalled and reconciling", observed: 2, conds: []metav1.Condition{
			cond(meta.ReadyCondition, metav1.ConditionFalse, 2), cond(meta.StalledCondition, metav1.ConditionTrue, 2),
			cond(meta.ReconcilingCondition, metav1.ConditionTrue, 2)}, wantRule: "STS004"},
		{name: "reconciling and ready", observed: 2, conds: []metav1.Condition{
			cond(meta.ReadyCondition, metav1.ConditionTrue, 2), cond(meta.ReconcilingCondition, metav1.ConditionTrue, 2)}, wantRule: "STS005"},
		{name: "ready with a negative condition", observed: 2, conds: []metav1.Condition{
			cond(meta.ReadyCondition, metav1.ConditionTrue, 2), cond(sourcev1.FetchFailedCondition, metav1.ConditionTrue, 2)}, wantRule: "STS006"},
		{name: "not ready without a message", observed: 2, conds: []metav1.Condition{
			{Type: meta.ReadyCondition, Status: metav1.ConditionFalse, Reason: "R", ObservedGeneration: 2}}, wantRule: "STS007"},
		{name: "two status writers", observed: -1, writers: []string{"windlass", "kubectl"}, wantRule: "STS008"},
		{name: "one status writer", observed: -1, writers: []string{"windlass", "windlass"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			obj := &sourcev1.GitRepository{ObjectMeta: metav1.ObjectMeta{Name: "repo", Generation: 2}}
			obj.Status.ObservedGeneration = tt.observed
			obj.Status.Conditions = tt.conds
			for _, w := range tt.writers {
				obj.ManagedFields = append(obj.ManagedFields, metav1.ManagedFieldsEntry{Manager: w, Subresource: "status"})
			}
			err := Status(obj, sourcev1.FetchFailedCondition)
			if tt.wantRule == "" {
				g.Expect(err).NotTo(HaveOccurred())
				return
			}
			g.Expect(err).To(MatchError(ContainSubstring(tt.wantRule)))
		})
	}
}
