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

// ObjectKey names an object whose health is waited for, whatever the
// version of its kind.
type ObjectKey struct {
	schema.GroupKind
	types.NamespacedName
}

// KeyOf returns the key of the object ref names.
func KeyOf(ref ObjectRef) ObjectKey {
	gk := schema.FromAPIVersionAndKind(ref.APIVersion, ref.Kind).GroupKind()
	return ObjectKey{GroupKind: gk, NamespacedName: types.NamespacedName{Namespace: ref.Namespace, Name: ref.Name}}
}

// Wakes wakes the waits for the health of objects when the watch tells
// that the health of one of them changed: a wait that polls sleeps until
// its next poll or until woken, whichever comes first. A nil *Wakes wakes
// nothing.
type Wakes struct {
	mu   sync.Mutex
	subs map[ObjectKey]map[chan struct{}]struct{}
}

// NewWakes returns the Wakes of the changes notifier tells of.
func NewWakes(notifier Notifier) *Wakes {
	w := &Wakes{subs: map[ObjectKey]map[chan struct{}]struct{}{}}
	notifier.NotifyHealth(w.tell)
	return w
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
	keys := make([]ObjectKey, 0, len(refs))
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, ref := range refs {
		key := KeyOf(ref)
		if w.subs[key] == nil {
			w.subs[key] = map[chan struct{}]struct{}{}
		}
		w.subs[key][ch] = struct{}{}
		keys = append(keys, key)
	}
	return ch, func() { w.unsubscribe(ch, keys) }
}

func (w *Wakes) unsubscribe(ch chan struct{}, keys []ObjectKey) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, key := range keys {
		delete(w.subs[key], ch)
		if len(w.subs[key]) == 0 {
			delete(w.subs, key)
		}
	}
}

// tell wakes the subscriptions of the object.
func (w *Wakes) tell(gvk schema.GroupVersionKind, key types.NamespacedName) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for ch := range w.subs[ObjectKey{GroupKind: gvk.GroupKind(), NamespacedName: key}] {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}
