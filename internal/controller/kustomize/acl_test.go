package kustomize

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	kustomizev1 "github.com/windlass-dev/windlass/api/kustomize/v1"
	"github.com/windlass-dev/windlass/api/meta"
	sourcev1 "github.com/windlass-dev/windlass/api/source/v1"
	"github.com/windlass-dev/windlass/internal/conditions"
	"github.com/windlass-dev/windlass/internal/patch"
	"github.com/windlass-dev/windlass/internal/reconcile"
	"github.com/windlass-dev/windlass/internal/reconcile/outcome"
	"github.com/windlass-dev/windlass/internal/scheme"
)

// TestNoCrossNamespaceRefs runs the source and dependency steps of
// Kustomizations that reference other namespaces, with and without
// --no-cross-namespace-refs: refused references stall the object with
// AccessDenied and a terminal error (no retry until the spec changes);
// same-namespace references and an open controller go on.
func TestNoCrossNamespaceRefs(t *testing.T) {
	source := &sourcev1.GitRepository{ObjectMeta: metav1.ObjectMeta{Namespace: "shared", Name: "repo"}}
	source.Status.Artifact = &meta.Artifact{Revision: "main@sha1:1"}
	local := source.DeepCopy()
	local.Namespace = "tenant"
	dep := &kustomizev1.Kustomization{ObjectMeta: metav1.ObjectMeta{Namespace: "shared", Name: "infra", Generation: 1}}
	dep.Status.ObservedGeneration = 1
	conditions.MarkTrue(dep, meta.ReadyCondition, meta.SucceededReason, "ready")
	tests := []struct {
		name       string
		locked     bool
		sourceNS   string
		dependsOn  []meta.DependencyReference
		wantDenied string
	}{
		{name: "source in another namespace, locked", locked: true, sourceNS: "shared", wantDenied: "cross-namespace reference to GitRepository 'shared/repo'"},
		{name: "dependency in another namespace, locked", locked: true, dependsOn: []meta.DependencyReference{{Namespace: "shared", Name: "infra"}},
			wantDenied: "cross-namespace reference to Kustomization 'shared/infra'"},
		{name: "same namespace, locked", locked: true},
		{name: "source and dependency in another namespace, open", sourceNS: "shared", dependsOn: []meta.DependencyReference{{Namespace: "shared", Name: "infra"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			ctx := context.Background()
			obj := &kustomizev1.Kustomization{
				ObjectMeta: metav1.ObjectMeta{Namespace: "tenant", Name: "app", Generation: 2},
				Spec: kustomizev1.KustomizationSpec{
					Interval:  metav1.Duration{Duration: time.Hour},
					SourceRef: kustomizev1.CrossNamespaceSourceReference{Kind: sourcev1.GitRepositoryKind, Name: "repo", Namespace: tt.sourceNS},
					DependsOn: tt.dependsOn,
				},
			}
			c := fake.NewClientBuilder().WithScheme(scheme.New()).WithObjects(obj.DeepCopy(), source.DeepCopy(), local.DeepCopy(), dep.DeepCopy()).
				WithStatusSubresource(&kustomizev1.Kustomization{}).Build()
			r := &KustomizationReconciler{Client: c, NoCrossNamespaceRefs: tt.locked, DependencyRequeue: time.Second}
			patcher := patch.NewHelper(obj, c)
			res, err := reconcile.RunSteps(ctx, obj, &ksScope{patcher: patcher}, r.reconcileSource, r.reconcileDependencies)
			if tt.wantDenied == "" {
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(res).To(Equal(outcome.ResultSuccess))
				return
			}
			g.Expect(err).To(MatchError(ContainSubstring(tt.wantDenied)))
			g.Expect(outcome.ReasonOf(err, "")).To(Equal(kustomizev1.AccessDeniedReason))

			result, err := r.runner().SummarizeAndPatch(ctx, obj, patcher, res, err, time.Now())
			g.Expect(reconcile.IsTerminal(err)).To(BeTrue(), "a refused reference is not retried: %v", err)
			g.Expect(result.RequeueAfter).To(BeZero())
			stored := &kustomizev1.Kustomization{}
			g.Expect(c.Get(ctx, client.ObjectKeyFromObject(obj), stored)).To(Succeed())
			g.Expect(conditions.IsTrue(stored, meta.StalledCondition)).To(BeTrue())
			g.Expect(conditions.Reason(stored, meta.ReadyCondition)).To(Equal(kustomizev1.AccessDeniedReason))
			g.Expect(stored.Status.ObservedGeneration).To(Equal(int64(2)))
		})
	}
}
