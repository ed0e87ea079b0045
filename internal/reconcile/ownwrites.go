package reconcile

import (
	"sync"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/resourceversion"
)

// ownWrites remembers, per object, the resourceVersion that the last run
// that wrote the object left it at. Until the cache holds that version or a
// newer one, what it holds is older than the run's own writes: a run that
// acted on it would act on a status it has already changed (a release
// installed again, say). Resource versions are compared as the API server
// allows (resourceversion.CompareResourceVersion); one that is not well
// formed ends the wait.
type ownWrites struct {
	written sync.Map // types.NamespacedName -> string
}

// record notes that a run left an object at version, the answer to its
// last write; "" (a run that wrote nothing) leaves nothing to wait for.
func (w *ownWrites) record(key types.NamespacedName, version string) {
	if version != "" {
		w.written.Store(key, version)
	}
}

// behind tells whether the cache's version of an object is older than the
// version the last run wrote: the cache has not seen that write yet.
func (w *ownWrites) behind(key types.NamespacedName, cachedVersion string) bool {
	written, ok := w.written.Load(key)
	if !ok {
		return false
	}
	if order, err := resourceversion.CompareResourceVersion(cachedVersion, written.(string)); err == nil && order < 0 {
		return true
	}
	w.written.Delete(key)
	return false
}

// forget drops what is kept of a deleted object.
func (w *ownWrites) forget(key types.NamespacedName) {
	w.written.Delete(key)
}
