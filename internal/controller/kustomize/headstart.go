package kustomize

import (
	"context"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// maxHeadStart bounds how long the Kustomizations of a source wait for
// those whose folder its new artifact changed.
const maxHeadStart = 2 * time.Second

// headStarts give the Kustomizations whose folder a source's new artifact
// changed the machine to themselves: the priority queue hands them to the
// first workers, and the source's other Kustomizations, which the other
// workers take at once and which mostly find their output unchanged, wait
// until those runs end, at most maxHeadStart. Without it, a commit to one
// application of a monorepo is applied while a thousand others build and
// write their status beside it. Its zero value is ready to use.
type headStarts struct {
	mu       sync.Mutex
	bySource map[string]*headStart
	// limit is maxHeadStart, or what a test sets.
	limit time.Duration
}

// headStart is the head start of the changed Kustomizations of one source.
type headStart struct {
	running map[types.NamespacedName]bool // the changed ones whose run has not ended
	over    chan struct{}                 // closed when none is left, or the time is up
}

// begin gives the Kustomizations changed, of the source with key source,
// a head start over its others; it ends the source's earlier one.
func (h *headStarts) begin(source string, changed []types.NamespacedName) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.bySource == nil {
		h.bySource = map[string]*headStart{}
	}
	h.endLocked(source)
	hs := &headStart{running: map[types.NamespacedName]bool{}, over: make(chan struct{})}
	for _, key := range changed {
		hs.running[key] = true
	}
	h.bySource[source] = hs
	limit := h.limit
	if limit == 0 {
		limit = maxHeadStart
	}
	time.AfterFunc(limit, func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		if h.bySource[source] == hs {
			h.endLocked(source)
		}
	})
}

// ran records that the run of key, of the source with key source, ended.
func (h *headStarts) ran(source string, key types.NamespacedName) {
	h.mu.Lock()
	defer h.mu.Unlock()
	hs := h.bySource[source]
	if hs == nil || !hs.running[key] {
		return
	}
	delete(hs.running, key)
	if len(hs.running) == 0 {
		h.endLocked(source)
	}
}

// wait returns once the Kustomizations with a head start over key, of the
// source with key source, have run, or ctx ends; at once when key has the
// head start itself or there is none.
func (h *headStarts) wait(ctx context.Context, source string, key types.NamespacedName) {
	h.mu.Lock()
	hs := h.bySource[source]
	if hs == nil || hs.running[key] {
		h.mu.Unlock()
		return
	}
	h.mu.Unlock()
	select {
	case <-hs.over:
	case <-ctx.Done():
	}
}

// endLocked ends the source's head start, if it has one; h.mu is held.
func (h *headStarts) endLocked(source string) {
	if hs := h.bySource[source]; hs != nil {
		close(hs.over)
		delete(h.bySource, source)
	}
}
