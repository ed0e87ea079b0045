package kustomize

import (
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/windlass-dev/windlass/internal/health"
	"github.com/windlass-dev/windlass/internal/versions"
)

// healthNotifier is the health.Notifier of a test: it keeps the function
// to tell.
type healthNotifier struct{ tell versions.HealthChanged }

func (n *healthNotifier) NotifyHealth(fn versions.HealthChanged) { n.tell = fn }

// TestHealthWaitsAreWoken: a change of an object wakes the waits that wait
// for it, as long as they wait for it, and no other.
func TestHealthWaitsAreWoken(t *testing.T) {
	ref := func(kind, name string) health.ObjectStatus {
		return health.ObjectStatus{Ref: health.ObjectRef{APIVersion: "apps/v1", Kind: kind, Namespace: "ns", Name: name}}
	}
	a, b := types.NamespacedName{Namespace: "ns", Name: "a"}, types.NamespacedName{Namespace: "ns", Name: "b"}
	for _, tc := range []struct {
		name   string
		steps  func(h *healthWaits)
		object string
		want   []types.NamespacedName
	}{
		{"waited for", func(h *healthWaits) { h.wait(a, "r1", []health.ObjectStatus{ref("Deployment", "web")}) },
			"Deployment/web", []types.NamespacedName{a}},
		{"by two", func(h *healthWaits) {
			h.wait(a, "r1", []health.ObjectStatus{ref("Deployment", "web")})
			h.wait(b, "r1", []health.ObjectStatus{ref("Deployment", "web"), ref("StatefulSet", "db")})
		}, "Deployment/web", []types.NamespacedName{a, b}},
		{"another kind of the same name", func(h *healthWaits) { h.wait(a, "r1", []health.ObjectStatus{ref("Deployment", "web")}) },
			"StatefulSet/web", nil},
		{"still pending", func(h *healthWaits) {
			h.wait(a, "r1", []health.ObjectStatus{ref("Deployment", "web"), ref("StatefulSet", "db")})
			h.wait(a, "r1", []health.ObjectStatus{ref("StatefulSet", "db")})
		}, "StatefulSet/db", []types.NamespacedName{a}},
		{"no longer pending", func(h *healthWaits) {
			h.wait(a, "r1", []health.ObjectStatus{ref("Deployment", "web"), ref("StatefulSet", "db")})
			h.wait(a, "r1", []health.ObjectStatus{ref("StatefulSet", "db")})
		}, "Deployment/web", nil},
		{"wait ended", func(h *healthWaits) {
			h.wait(a, "r1", []health.ObjectStatus{ref("Deployment", "web")})
			h.end(a)
		}, "Deployment/web", nil},
		{"a new revision", func(h *healthWaits) {
			h.wait(a, "r1", []health.ObjectStatus{ref("Deployment", "web")})
			h.wait(a, "r2", []health.ObjectStatus{ref("Deployment", "api")})
		}, "Deployment/web", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			n := &healthNotifier{}
			var woken []types.NamespacedName
			h := healthWaits{wakes: health.NewWakes(n), woken: func(key types.NamespacedName) { woken = append(woken, key) }}
			tc.steps(&h)
			kind, name, _ := strings.Cut(tc.object, "/")
			n.tell(schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: kind}, types.NamespacedName{Namespace: "ns", Name: name})
			g.Expect(woken).To(ConsistOf(tc.want))
		})
	}
}
