package ssa

import (
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func withMeta(annotations, labels map[string]string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("v1")
	u.SetKind("ConfigMap")
	u.SetName("x")
	u.SetAnnotations(annotations)
	u.SetLabels(labels)
	return u
}

func TestPolicyOf(t *testing.T) {
	tests := []struct {
		name        string
		annotations map[string]string
		labels      map[string]string
		want        Policy
		wantErr     bool
	}{
		{name: "default", want: PolicyOverride},
		{name: "override", annotations: map[string]string{SSAKey: "Override"}, want: PolicyOverride},
		{name: "merge lower case", annotations: map[string]string{SSAKey: "merge"}, want: PolicyMerge},
		{name: "if not present", annotations: map[string]string{SSAKey: "IfNotPresent"}, want: PolicyIfNotPresent},
		{name: "ignore", annotations: map[string]string{SSAKey: "Ignore"}, want: PolicyIgnore},
		{name: "label", labels: map[string]string{SSAKey: "IfNotPresent"}, want: PolicyIfNotPresent},
		{name: "annotation wins over label", annotations: map[string]string{SSAKey: "Merge"}, labels: map[string]string{SSAKey: "Ignore"}, want: PolicyMerge},
		{name: "legacy reconcile disabled", annotations: map[string]string{ReconcileKey: "disabled"}, want: PolicyIgnore},
		{name: "legacy reconcile Disabled label", labels: map[string]string{ReconcileKey: "Disabled"}, want: PolicyIgnore},
		{name: "legacy reconcile wins", annotations: map[string]string{ReconcileKey: "disabled", SSAKey: "Override"}, want: PolicyIgnore},
		{name: "reconcile enabled is no opt-out", annotations: map[string]string{ReconcileKey: "enabled"}, want: PolicyOverride},
		{name: "unknown", annotations: map[string]string{SSAKey: "Replace"}, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			got, err := PolicyOf(withMeta(tt.annotations, tt.labels))
			if tt.wantErr {
				g.Expect(err).To(MatchError(ContainSubstring("unknown " + SSAKey)))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got).To(Equal(tt.want))
		})
	}
}

func TestForceEnabled(t *testing.T) {
	tests := []struct {
		name        string
		annotations map[string]string
		labels      map[string]string
		want        bool
	}{
		{name: "absent", want: false},
		{name: "Enabled", annotations: map[string]string{ForceKey: "Enabled"}, want: true},
		{name: "enabled label", labels: map[string]string{ForceKey: "enabled"}, want: true},
		{name: "true is not Enabled", annotations: map[string]string{ForceKey: "true"}, want: false},
		{name: "Disabled", annotations: map[string]string{ForceKey: "Disabled"}, want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			NewWithT(t).Expect(ForceEnabled(withMeta(tt.annotations, tt.labels))).To(Equal(tt.want))
		})
	}
}

func TestPruneDisabled(t *testing.T) {
	tests := []struct {
		name        string
		annotations map[string]string
		labels      map[string]string
		want        bool
	}{
		{name: "absent", want: false},
		{name: "disabled", annotations: map[string]string{PruneKey: "disabled"}, want: true},
		{name: "Disabled label", labels: map[string]string{PruneKey: "Disabled"}, want: true},
		{name: "DISABLED with spaces", annotations: map[string]string{PruneKey: " DISABLED "}, want: true},
		{name: "enabled", annotations: map[string]string{PruneKey: "enabled"}, want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			NewWithT(t).Expect(PruneDisabled(withMeta(tt.annotations, tt.labels))).To(Equal(tt.want))
		})
	}
}
