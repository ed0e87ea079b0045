package kustomize

import (
	"context"
	"errors"
	"sync"

	"k8s.io/apimachinery/pkg/types"
)

// errNewRevision is the cause of a health wait cancelled because the source
// has a new revision.
var errNewRevision = errors.New("a new source revision arrived")

// healthWaits tracks the health checks under way, so that a new source
// revision can cancel a wait for the objects of an older one.
type healthWaits struct {
	mu      sync.Mutex
	waiting map[types.NamespacedName]healthWait
}

type healthWait struct {
	revision string
	cancel   context.CancelCauseFunc
}

// start registers a wait of key for revision and returns its context and
// the function that ends it.
func (h *healthWaits) start(ctx context.Context, key types.NamespacedName, revision string) (context.Context, func()) {
	wctx, cancel := context.WithCancelCause(ctx)
	h.mu.Lock()
	if h.waiting == nil {
		h.waiting = map[types.NamespacedName]healthWait{}
	}
	h.waiting[key] = healthWait{revision: revision, cancel: cancel}
	h.mu.Unlock()
	return wctx, func() {
		h.mu.Lock()
		delete(h.waiting, key)
		h.mu.Unlock()
		cancel(nil)
	}
}

// cancelOlder cancels the wait of key when it is for another revision than
// revision.
func (h *healthWaits) cancelOlder(key types.NamespacedName, revision string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if w, ok := h.waiting[key]; ok && w.revision != revision {
		w.cancel(errNewRevision)
	}
}
