package versions

import (
	"context"
	"reflect"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	toolscache "k8s.io/client-go/tools/cache"
)

// A wait for a watch to sync ends when its list or watch fails, rather
// than at the caller's deadline: a list that takes long (tens of thousands
// of objects on a busy API server) is worth waiting for, one that was
// refused is not. A failing watch is known by its reflector's type
// description: the kind, for the whole objects of the kinds judged for
// health; one description for every watch of metadata, so that the
// failure of one such watch ends the waits for every metadata watch that
// started before it and has not synced (they read their objects instead,
// as for any watch that did not sync).

// metadataDescription is the type description of every watch of
// metadata (see toolscache.Reflector.TypeDescription).
var metadataDescription = reflect.TypeOf(&metav1.PartialObjectMetadata{}).String()

// failures remembers, in the order they happened, when each watch
// started and when a watch of each type description last failed: each
// event takes the next number of a counter, so that "since" needs no
// clock.
type failures struct {
	mu      sync.Mutex
	last    uint64
	started map[schema.GroupVersionKind]uint64
	failed  map[string]uint64
}

// start records that the watch of gvk starts now, unless it has.
func (f *failures) start(gvk schema.GroupVersionKind) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.started == nil {
		f.started = map[schema.GroupVersionKind]uint64{}
	}
	if _, ok := f.started[gvk]; !ok {
		f.last++
		f.started[gvk] = f.last
	}
}

// record remembers that a watch of type description failed now.
func (f *failures) record(description string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.failed == nil {
		f.failed = map[string]uint64{}
	}
	f.last++
	f.failed[description] = f.last
}

// since tells whether a watch of type description failed since the watch
// of gvk started.
func (f *failures) since(gvk schema.GroupVersionKind, description string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	started, ok := f.started[gvk]
	failed, seen := f.failed[description]
	return ok && seen && failed > started
}

// watchFailed is the caches' watch error handler: it logs as client-go
// does, and remembers the failure (see failures).
func (c *Cache) watchFailed(ctx context.Context, r *toolscache.Reflector, err error) {
	toolscache.DefaultWatchErrorHandler(ctx, r, err)
	c.failures.record(r.TypeDescription())
}

// failedSince tells whether the watch of gvk, or one that cannot be told
// from it, failed since it started.
func (c *Cache) failedSince(gvk schema.GroupVersionKind) bool {
	description := metadataDescription
	if c.health.judges(gvk.GroupKind()) {
		description = gvk.String()
	}
	return c.failures.since(gvk, description)
}
