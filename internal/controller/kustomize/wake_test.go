package kustomize

import (
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/windlass-dev/windlass/internal/health"
)

// TestHealthWaitsIndex: a wait is found from each object it waits for, as
// long as it waits for it.
func TestHealthWaitsIndex(t *testing.T) {
	ref := func(kind, name string) health.ObjectStatus {
		return health.ObjectStatus{Ref: health.ObjectRef{APIVersion: "apps/v1", Kind: kind, Namespace: "ns", Name: name}}
	}
	object := func(kind, name string) health.ObjectKey {
		return health.ObjectKey{GroupKind: schema.GroupKind{Group: "apps", Kind: kind}, NamespacedName: types.NamespacedName{Namespace: "ns", Name: name}}
	}
	a, b := types.NamespacedName{Namespace: "ns", Name: "a"}, types.NamespacedName{Namespace: "ns", Name: "b"}
	for _, tc := range []struct {
		name   string
		steps  func(h *healthWaits)
		object health.ObjectKey
		want   []types.NamespacedName
	}{
		{"waited for", func(h *healthWaits) { h.wait(a, "r1", []health.ObjectStatus{ref("Deployment", "web")}) },
			object("Deployment", "web"), []types.NamespacedName{a}},
		{"by two", func(h *healthWaits) {
			h.wait(a, "r1", []health.ObjectStatus{ref("Deployment", "web")})
			h.wait(b, "r1", []health.ObjectStatus{ref("Deployment", "web"), ref("StatefulSet", "db")})
		}, object("Deployment", "web"), []types.NamespacedName{a, b}},
		{"another kind of the same name", func(h *healthWaits) { h.wait(a, "r1", []health.ObjectStatus{ref("Deployment", "web")}) },
			object("StatefulSet", "web"), nil},
		{"no longer pending", func(h *healthWaits) {
			h.wait(a, "r1", []health.ObjectStatus{ref("Deployment", "web"), ref("StatefulSet", "db")})
			h.wait(a, "r1", []health.ObjectStatus{ref("StatefulSet", "db")})
		}, object("Deployment", "web"), nil},
		{"wait ended", func(h *healthWaits) {
			h.wait(a, "r1", []health.ObjectStatus{ref("Deployment", "web")})
			h.end(a)
		}, object("Deployment", "web"), nil},
		{"a new revision", func(h *healthWaits) {
			h.wait(a, "r1", []health.ObjectStatus{ref("Deployment", "web")})
			h.wait(a, "r2", []health.ObjectStatus{ref("Deployment", "api")})
		}, object("Deployment", "web"), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			var h healthWaits
			tc.steps(&h)
			g.Expect(h.waitingFor(tc.object)).To(ConsistOf(tc.want))
		})
	}
}
