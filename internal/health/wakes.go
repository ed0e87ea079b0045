package health

import (
	"sync"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/windlass-dev/windlass/internal/versions"
)

// Notifier tells of the objects whose health changed, as a watch judges
// them: a versions cache made WithHealth.
type Notifier interface {
	NotifyHealth(fn versions.HealthChanged)
}

// objectKey names an object whose health is waited for, whatever the
// version of its kind.
type objectKey struct {
	schema.GroupKind
	types.NamespacedName
}

// keyOf returns the key of the object ref names.
func keyOf(ref ObjectRef) objectKey {
	gk := schema.FromAPIVersionAndKind(ref.APIVersion, ref.Kind).GroupKind()
	return objectKey{GroupKind: gk, NamespacedName: types.NamespacedName{Namespace: ref.Namespace, Name: ref.Name}}
}

// Wakes wakes the waits for the health of objects when the watch tells
// that the health of one of them changed: a wait that polls sleeps until
// its next poll or until woken, whichever comes first; a wait that is not
// polled (a Kustomization's, between its runs) is queued again. It is the
// one index of which waits wait for which object. A nil *Wakes wakes
// nothing.
type Wakes struct {
	mu       sync.Mutex
	watchers map[objectKey]map[*watcher]struct{}
}

// watcher is one Watch: the function it calls.
type watcher struct{ changed func() }

// NewWakes returns the Wakes of the changes notifier tells of.
func NewWakes(notifier Notifier) *Wakes {
	w := &Wakes{watchers: map[objectKey]map[*watcher]struct{}{}}
	notifier.NotifyHealth(w.tell)
	return w
}

// Watch calls changed each time the health of one of the objects refs
// names changes, until the returned function is called (a change told
// while it is called may still call changed once). changed runs on the
// watch's goroutine: it must not block, and may take locks held while
// Watch or its cancel function are called.
func (w *Wakes) Watch(refs []ObjectRef, changed func()) (cancel func()) {
	if w == nil {
		return func() {}
	}
	sub := &watcher{changed: changed}
	keys := make([]objectKey, 0, len(refs))
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, ref := range refs {
		key := keyOf(ref)
		if w.watchers[key] == nil {
			w.watchers[key] = map[*watcher]struct{}{}
		}
		w.watchers[key][sub] = struct{}{}
		keys = append(keys, key)
	}
	return func() { w.unwatch(sub, keys) }
}

// Subscribe returns a channel that receives when the health of one of
// the objects refs names changes, and the function that ends the
// subscription. Changes that come while the last one was not received yet
// are told once.
func (w *Wakes) Subscribe(refs []ObjectRef) (<-chan struct{}, func()) {
	if w == nil {
		return nil, func() {}
	}
	ch := make(chan struct{}, 1)
	return ch, w.Watch(refs, func() {
		select {
		case ch <- struct{}{}:
		default:
		}
	})
}

func (w *Wakes) unwatch(sub *watcher, keys []objectKey) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, key := range keys {
		delete(w.watchers[key], sub)
		if len(w.watchers[key]) == 0 {
			delete(w.watchers, key)
		}
	}
}

// tell calls the watchers of the object, without holding the lock, so
// that a watcher may take a lock under which Watch is called.
func (w *Wakes) tell(gvk schema.GroupVersionKind, key types.NamespacedName) {
	w.mu.Lock()
	subs := w.watchers[objectKey{GroupKind: gvk.GroupKind(), NamespacedName: key}]
	called := make([]*watcher, 0, len(subs))
	for sub := range subs {
		called = append(called, sub)
	}
	w.mu.Unlock()
	for _, sub := range called {
		sub.changed()
	}
}
