package ssa

import (
	"context"
	"errors"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestApplyAllStagedFresh checks the first apply of a set (Fresh): new
// objects cost one apply each, no dry run and no read; an object that
// exists with other managers' values is read, dry-run and taken over as in
// any apply; one marked Ignore in the cluster stays untouched; and an
// object the API server refuses fails alone, after the others are
// written.
func TestApplyAllStagedFresh(t *testing.T) {
	ctx := context.Background()
	invalid := func(ns string) *unstructured.Unstructured {
		return configMap(ns, "Not_Valid", nil, map[string]any{"k": "v"})
	}
	tests := []struct {
		name string
		// live are the ConfigMaps that exist before the apply, with their
		// annotations, written by another manager with value "theirs".
		live map[string]map[string]string
		// extra objects of the set besides a and b.
		extra func(ns string) []*unstructured.Unstructured
		// wantSummary is the change set; wantData the values afterwards.
		wantSummary  []string
		wantData     map[string]string
		wantApplies  int64
		wantDryRuns  int64
		wantGets     int64
		wantRefusals []string
	}{
		{name: "new objects: one apply each",
			wantSummary: []string{"a created", "b created"}, wantData: map[string]string{"a": "mine", "b": "mine"},
			wantApplies: 2},
		{name: "an object with another manager's values is taken over as in any apply",
			live:        map[string]map[string]string{"b": nil},
			wantSummary: []string{"a created", "b configured"}, wantData: map[string]string{"a": "mine", "b": "mine"},
			wantApplies: 3, wantDryRuns: 1, wantGets: 1},
		{name: "an object marked Ignore in the cluster stays untouched",
			live:        map[string]map[string]string{"b": {SSAKey: string(PolicyIgnore)}},
			wantSummary: []string{"a created", "b skipped"}, wantData: map[string]string{"a": "mine", "b": "theirs"},
			wantApplies: 2, wantDryRuns: 1, wantGets: 1},
		{name: "an object the API server refuses fails alone",
			extra:       func(ns string) []*unstructured.Unstructured { return []*unstructured.Unstructured{invalid(ns)} },
			wantSummary: []string{"a created", "b created"}, wantData: map[string]string{"a": "mine", "b": "mine"},
			wantApplies: 3, wantRefusals: []string{"Not_Valid"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			ns := env.CreateNamespace(t)
			for name, annotations := range tt.live {
				g.Expect(env.Client.Create(ctx, &corev1.ConfigMap{
					ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Annotations: annotations},
					Data:       map[string]string{"k": "theirs"},
				})).To(Succeed())
			}
			c := &countingClient{Client: env.Client}
			m, err := New(c, env.Client.RESTMapper(), Options{FieldManager: testFieldManager, Owner: Owner{Name: "app", Namespace: ns}})
			g.Expect(err).NotTo(HaveOccurred())
			objs := []*unstructured.Unstructured{
				configMap(ns, "a", nil, map[string]any{"k": "mine"}), configMap(ns, "b", nil, map[string]any{"k": "mine"}),
			}
			if tt.extra != nil {
				objs = append(objs, tt.extra(ns)...)
			}

			cs, err := m.ApplyAllStaged(ctx, objs, ApplyOptions{Fresh: true})

			var refused []string
			var invalidErr *ValidationError
			if errors.As(err, &invalidErr) {
				g.Expect(invalidErr.Partial).To(BeTrue())
				g.Expect(invalidErr.Error()).To(HavePrefix("apply refused: "))
				for _, f := range invalidErr.Failures {
					refused = append(refused, f.Object.Name)
				}
			} else {
				g.Expect(err).NotTo(HaveOccurred())
			}
			g.Expect(refused).To(Equal(tt.wantRefusals))
			var summary []string
			for _, ch := range cs.Entries {
				summary = append(summary, ch.Object.Name+" "+string(ch.Action))
			}
			g.Expect(summary).To(ConsistOf(tt.wantSummary))
			for name, want := range tt.wantData {
				g.Expect(liveData(t, ns, name)).To(HaveKeyWithValue("k", want), name)
			}
			g.Expect(c.applies.Load()).To(Equal(tt.wantApplies), "applies")
			g.Expect(c.dryRuns.Load()).To(Equal(tt.wantDryRuns), "dry runs")
			g.Expect(c.gets.Load()).To(Equal(tt.wantGets), "reads")
		})
	}
}
