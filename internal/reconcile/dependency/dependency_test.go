package dependency

import (
	"context"
	"errors"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	helmv2 "github.com/windlass-dev/windlass/api/helm/v2"
	kustomizev1 "github.com/windlass-dev/windlass/api/kustomize/v1"
	"github.com/windlass-dev/windlass/api/meta"
	"github.com/windlass-dev/windlass/internal/conditions"
	"github.com/windlass-dev/windlass/internal/reconcile/outcome"
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
			g.Expect(outcome.ReasonOf(err, "")).To(Equal(tt.wantReason))
			var stalling *outcome.Stalling
			g.Expect(errors.As(err, &stalling)).To(Equal(tt.wantStall))
		})
	}
}

func hr(ns, name string, ready bool, deps ...meta.DependencyReference) *helmv2.HelmRelease {
	h := &helmv2.HelmRelease{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Generation: 1}}
	h.Spec.DependsOn = deps
	h.Status.ObservedGeneration = 1
	if ready {
		conditions.MarkTrue(h, meta.ReadyCondition, meta.SucceededReason, "ok")
	}
	return h
}

// TestCheckAcrossKinds: a Kustomization may wait for a HelmRelease (and the
// other way round) by naming its kind; a cycle through both kinds is found.
func TestCheckAcrossKinds(t *testing.T) {
	onHR := func(name string) meta.DependencyReference {
		return meta.DependencyReference{Kind: helmv2.HelmReleaseKind, Name: name}
	}
	onKS := func(name string) meta.DependencyReference {
		return meta.DependencyReference{Kind: kustomizev1.KustomizationKind, Name: name}
	}
	tests := []struct {
		name      string
		objects   []client.Object
		obj       *kustomizev1.Kustomization
		others    map[string]Kind
		wantErr   string
		wantStall bool
	}{
		{name: "ready release", objects: []client.Object{hr("a", "crds", true)}, obj: ks("a", "app", false, onHR("crds"))},
		{name: "release not ready", objects: []client.Object{hr("a", "crds", false)}, obj: ks("a", "app", false, onHR("crds")),
			wantErr: "dependency 'HelmRelease/a/crds' is not ready"},
		{name: "release missing", obj: ks("a", "app", false, onHR("crds")), wantErr: "dependency 'HelmRelease/a/crds' not found"},
		{name: "a Kustomization named by its kind is one of the own kind", objects: []client.Object{ks("a", "infra", false)},
			obj: ks("a", "app", false, onKS("infra")), wantErr: "dependency 'a/infra' is not ready"},
		{name: "cycle through a release", objects: []client.Object{hr("a", "crds", true, onKS("app"))},
			obj: ks("a", "app", false, onHR("crds")), wantErr: "dependency cycle: a/app -> HelmRelease/a/crds -> a/app", wantStall: true},
		{name: "cycle through a release's dependency of its own kind",
			objects: []client.Object{hr("a", "crds", true, meta.DependencyReference{Name: "base"}), hr("a", "base", true, onKS("app"))},
			obj:     ks("a", "app", false, onHR("crds")),
			wantErr: "dependency cycle: a/app -> HelmRelease/a/crds -> HelmRelease/a/base -> a/app", wantStall: true},
		{name: "a kind the checker does not know", others: map[string]Kind{}, obj: ks("a", "app", false, onHR("crds")),
			wantErr: "a Kustomization cannot depend on a HelmRelease", wantStall: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			others := tt.others
			if others == nil {
				others = Kinds(helmv2.HelmReleaseKind)
			}
			c := &Checker[*kustomizev1.Kustomization]{
				Kind:      kustomizev1.KustomizationKind,
				Client:    fake.NewClientBuilder().WithScheme(scheme.New()).WithObjects(tt.objects...).Build(),
				New:       func() *kustomizev1.Kustomization { return &kustomizev1.Kustomization{} },
				DependsOn: func(k *kustomizev1.Kustomization) []meta.DependencyReference { return k.Spec.DependsOn },
				Others:    others,
				Requeue:   time.Second,
			}
			err := c.Check(context.Background(), tt.obj)
			if tt.wantErr == "" {
				g.Expect(err).NotTo(HaveOccurred())
				return
			}
			g.Expect(err).To(MatchError(ContainSubstring(tt.wantErr)))
			var stalling *outcome.Stalling
			g.Expect(errors.As(err, &stalling)).To(Equal(tt.wantStall))
		})
	}
}

func TestIndexKeys(t *testing.T) {
	g := NewWithT(t)
	k := ks("a", "app", false)
	g.Expect(IndexKey(kustomizev1.KustomizationKind, k, meta.DependencyReference{Name: "infra"})).To(Equal("Kustomization/a/infra"))
	g.Expect(IndexKey(kustomizev1.KustomizationKind, k, meta.DependencyReference{Kind: "HelmRelease", Namespace: "b", Name: "db"})).
		To(Equal("HelmRelease/b/db"))
	g.Expect(IndexKeyOf(helmv2.HelmReleaseKind, hr("b", "db", true))).To(Equal("HelmRelease/b/db"))
}
