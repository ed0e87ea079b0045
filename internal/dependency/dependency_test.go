package dependency

import (
	"context"
	"errors"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	kustomizev1 "github.com/windlass-dev/windlass/api/kustomize/v1"
	"github.com/windlass-dev/windlass/api/meta"
	"github.com/windlass-dev/windlass/internal/conditions"
	"github.com/windlass-dev/windlass/internal/reconcile"
	"github.com/windlass-dev/windlass/internal/scheme"
)

// ks returns a Kustomization of ns/name that depends on deps, Ready for
// its generation when ready.
func ks(ns, name string, ready bool, deps ...meta.DependencyReference) *kustomizev1.Kustomization {
	k := &kustomizev1.Kustomization{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Generation: 1}}
	k.Spec.DependsOn = deps
	k.Status.ObservedGeneration = 1
	if ready {
		conditions.MarkTrue(k, meta.ReadyCondition, meta.SucceededReason, "ok")
	}
	return k
}

func TestCheck(t *testing.T) {
	on := func(name string) meta.DependencyReference { return meta.DependencyReference{Name: name} }
	tests := []struct {
		name       string
		objects    []*kustomizev1.Kustomization
		obj        *kustomizev1.Kustomization
		locked     bool
		upToDate   bool
		wantErr    string
		wantReason string
		wantStall  bool
	}{
		{name: "no dependencies", obj: ks("a", "app", false), upToDate: true},
		{name: "ready", objects: []*kustomizev1.Kustomization{ks("a", "infra", true)}, obj: ks("a", "app", false, on("infra")), upToDate: true},
		{name: "not ready", objects: []*kustomizev1.Kustomization{ks("a", "infra", false)}, obj: ks("a", "app", false, on("infra")), upToDate: true,
			wantErr: "dependency 'a/infra' is not ready", wantReason: meta.DependencyNotReadyReason},
		{name: "ready but not up to date by the kind's rule", objects: []*kustomizev1.Kustomization{ks("a", "infra", true)},
			obj: ks("a", "app", false, on("infra")), wantErr: "is not ready", wantReason: meta.DependencyNotReadyReason},
		{name: "missing", obj: ks("a", "app", false, on("infra")), upToDate: true,
			wantErr: "dependency 'a/infra' not found", wantReason: meta.DependencyNotReadyReason},
		{name: "cycle", objects: []*kustomizev1.Kustomization{ks("a", "infra", true, on("db")), ks("a", "db", true, on("app"))},
			obj: ks("a", "app", false, on("infra")), upToDate: true,
			wantErr: "dependency cycle: a/app -> a/infra -> a/db -> a/app", wantReason: meta.DependencyNotReadyReason, wantStall: true},
		{name: "other namespace, locked", objects: []*kustomizev1.Kustomization{ks("b", "infra", true)}, locked: true, upToDate: true,
			obj:     ks("a", "app", false, meta.DependencyReference{Namespace: "b", Name: "infra"}),
			wantErr: "cross-namespace reference to Kustomization 'b/infra' is not allowed", wantReason: meta.AccessDeniedReason, wantStall: true},
		{name: "a cycle through another namespace, locked, is refused before it is walked", locked: true, upToDate: true,
			objects: []*kustomizev1.Kustomization{ks("b", "infra", true, meta.DependencyReference{Namespace: "a", Name: "app"})},
			obj:     ks("a", "app", false, meta.DependencyReference{Namespace: "b", Name: "infra"}),
			wantErr: "cross-namespace reference", wantReason: meta.AccessDeniedReason, wantStall: true},
		{name: "readyExpr true although not Ready", objects: []*kustomizev1.Kustomization{ks("a", "infra", false)},
			obj: ks("a", "app", false, meta.DependencyReference{Name: "infra", ReadyExpr: "dep.metadata.name == 'infra' && self.metadata.name == 'app'"})},
		{name: "readyExpr false", objects: []*kustomizev1.Kustomization{ks("a", "infra", true)}, upToDate: true,
			obj:     ks("a", "app", false, meta.DependencyReference{Name: "infra", ReadyExpr: "false"}),
			wantErr: "is not ready", wantReason: meta.DependencyNotReadyReason},
		{name: "readyExpr that does not compile", objects: []*kustomizev1.Kustomization{ks("a", "infra", true)},
			obj:     ks("a", "app", false, meta.DependencyReference{Name: "infra", ReadyExpr: "dep.("}),
			wantErr: "invalid readyExpr", wantReason: meta.InvalidCELExpressionReason, wantStall: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			b := fake.NewClientBuilder().WithScheme(scheme.New())
			for _, o := range tt.objects {
				b = b.WithObjects(o)
			}
			c := &Checker[*kustomizev1.Kustomization]{
				Kind:                 kustomizev1.KustomizationKind,
				Client:               b.Build(),
				New:                  func() *kustomizev1.Kustomization { return &kustomizev1.Kustomization{} },
				DependsOn:            func(k *kustomizev1.Kustomization) []meta.DependencyReference { return k.Spec.DependsOn },
				UpToDate:             func(_, _ *kustomizev1.Kustomization) bool { return tt.upToDate },
				NoCrossNamespaceRefs: tt.locked,
				Requeue:              time.Second,
			}
			err := c.Check(context.Background(), tt.obj)
			if tt.wantErr == "" {
				g.Expect(err).NotTo(HaveOccurred())
				return
			}
			g.Expect(err).To(MatchError(ContainSubstring(tt.wantErr)))
			g.Expect(reconcile.ReasonOf(err, "")).To(Equal(tt.wantReason))
			var stalling *reconcile.Stalling
			g.Expect(errors.As(err, &stalling)).To(Equal(tt.wantStall))
		})
	}
}
