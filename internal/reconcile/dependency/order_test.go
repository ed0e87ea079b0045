package dependency

import (
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kustomizev1 "github.com/windlass-dev/windlass/api/kustomize/v1"
	"github.com/windlass-dev/windlass/api/meta"
)

func TestOrder(t *testing.T) {
	ks := func(ns, name string, deps ...meta.DependencyReference) *kustomizev1.Kustomization {
		return &kustomizev1.Kustomization{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: kustomizev1.KustomizationSpec{DependsOn: deps}}
	}
	on := func(name string) meta.DependencyReference { return meta.DependencyReference{Name: name} }
	tests := []struct {
		name string
		objs []*kustomizev1.Kustomization
		want []string
	}{
		{name: "no dependencies keep their order", objs: []*kustomizev1.Kustomization{ks("a", "x"), ks("a", "b")}, want: []string{"x", "b"}},
		{name: "a chain is reversed", objs: []*kustomizev1.Kustomization{ks("a", "app", on("db")), ks("a", "db", on("infra")), ks("a", "infra")},
			want: []string{"infra", "db", "app"}},
		{name: "a dependency elsewhere is ignored", objs: []*kustomizev1.Kustomization{ks("a", "app", on("missing")), ks("a", "b")},
			want: []string{"app", "b"}},
		{name: "another namespace's object of the same name is not a dependency",
			objs: []*kustomizev1.Kustomization{ks("a", "app", meta.DependencyReference{Name: "db", Namespace: "b"}), ks("a", "db")},
			want: []string{"app", "db"}},
		{name: "a cycle is broken where it closes", objs: []*kustomizev1.Kustomization{ks("a", "x", on("y")), ks("a", "y", on("x"))},
			want: []string{"y", "x"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			got := Order(tt.objs, func(k *kustomizev1.Kustomization) []meta.DependencyReference { return k.Spec.DependsOn })
			names := make([]string, 0, len(got))
			for _, k := range got {
				names = append(names, k.Name)
			}
			g.Expect(names).To(Equal(tt.want))
		})
	}
}
