package health

import (
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/windlass-dev/windlass/internal/versions"
)

// notifier is the Notifier of a test: it keeps the function to tell.
type notifier struct{ tell versions.HealthChanged }

func (n *notifier) NotifyHealth(fn versions.HealthChanged) { n.tell = fn }

// TestWakes: a subscription is woken by a change of an object it names,
// whatever the version of its kind, and by nothing else; changes pile up
// into one wake; an ended subscription is not woken.
func TestWakes(t *testing.T) {
	web := ObjectRef{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "ns", Name: "web"}
	deployment := func(version, name string) (schema.GroupVersionKind, types.NamespacedName) {
		return schema.GroupVersionKind{Group: "apps", Version: version, Kind: "Deployment"}, types.NamespacedName{Namespace: "ns", Name: name}
	}
	for _, tc := range []struct {
		name  string
		tells func(tell versions.HealthChanged)
		want  int
	}{
		{"the object", func(tell versions.HealthChanged) { tell(deployment("v1", "web")) }, 1},
		{"another version of its kind", func(tell versions.HealthChanged) { tell(deployment("v1beta2", "web")) }, 1},
		{"two changes, one wake", func(tell versions.HealthChanged) {
			tell(deployment("v1", "web"))
			tell(deployment("v1", "web"))
		}, 1},
		{"another object", func(tell versions.HealthChanged) { tell(deployment("v1", "api")) }, 0},
		{"another kind", func(tell versions.HealthChanged) {
			tell(schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "StatefulSet"}, types.NamespacedName{Namespace: "ns", Name: "web"})
		}, 0},
		{"another namespace", func(tell versions.HealthChanged) {
			gvk, _ := deployment("v1", "web")
			tell(gvk, types.NamespacedName{Namespace: "other", Name: "web"})
		}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			n := &notifier{}
			wakes := NewWakes(n)
			woken, unsubscribe := wakes.Subscribe([]ObjectRef{web})
			defer unsubscribe()
			tc.tells(n.tell)
			g.Expect(len(woken)).To(Equal(tc.want))
		})
	}

	t.Run("ended", func(t *testing.T) {
		g := NewWithT(t)
		n := &notifier{}
		wakes := NewWakes(n)
		woken, unsubscribe := wakes.Subscribe([]ObjectRef{web})
		unsubscribe()
		n.tell(deployment("v1", "web"))
		g.Expect(woken).NotTo(Receive())
		g.Expect(wakes.watchers).To(BeEmpty(), "nothing is kept of an ended subscription")
	})
	t.Run("nil wakes nothing", func(t *testing.T) {
		g := NewWithT(t)
		var wakes *Wakes
		woken, unsubscribe := wakes.Subscribe([]ObjectRef{web})
		unsubscribe()
		g.Expect(woken).To(BeNil())
	})
	t.Run("watchers", func(t *testing.T) {
		g := NewWithT(t)
		n := &notifier{}
		wakes := NewWakes(n)
		api := ObjectRef{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "ns", Name: "api"}
		calls := map[string]int{}
		stopBoth := wakes.Watch([]ObjectRef{web, api}, func() { calls["both"]++ })
		wakes.Watch([]ObjectRef{web}, func() { calls["web"]++ })
		n.tell(deployment("v1", "web"))
		n.tell(deployment("v1", "api"))
		g.Expect(calls).To(Equal(map[string]int{"both": 2, "web": 1}), "each watcher is called for each change of its objects")
		stopBoth()
		n.tell(deployment("v1", "api"))
		g.Expect(calls["both"]).To(Equal(2), "a cancelled watcher is not called")
		g.Expect(wakes.watchers).NotTo(HaveKey(keyOf(api)))
	})
	t.Run("a watcher watches again from its call", func(t *testing.T) {
		g := NewWithT(t)
		n := &notifier{}
		wakes := NewWakes(n)
		var stop func()
		renewed := 0
		var watch func()
		watch = func() {
			stop = wakes.Watch([]ObjectRef{web}, func() {
				// Were tell to hold its lock while it calls, this would
				// deadlock; so would a Kustomization's wake, which takes the
				// lock under which a run records its wait (and calls Watch
				// and cancel), against that run.
				stop()
				renewed++
				watch()
			})
		}
		watch()
		n.tell(deployment("v1", "web"))
		n.tell(deployment("v1", "web"))
		g.Expect(renewed).To(Equal(2))
		g.Expect(wakes.watchers[keyOf(web)]).To(HaveLen(1), "the renewed watch replaced the old one")
	})
}
