package health

import (
	"context"
	"maps"
	"sync"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/windlass-dev/windlass/internal/versions"
)

// Watch tells the health of applied objects as a watch last judged them: a
// versions cache made WithHealth(Judge, Watchable, ...).
type Watch interface {
	Health(ctx context.Context, gvk schema.GroupVersionKind, namespace, name string) (versions.Health, bool)
}

// Pending is the Verdicts of a check that continues a wait: the health of
// the objects the last check found not healthy, from the watch, so that an
// object that becomes healthy costs no read. The watch's verdict counts
// only when the object it judged is at least at the generation that check
// saw: a watch that lags behind an apply (which returned the new
// generation) would judge the object before the apply. Objects the watch
// does not hold, or that the last check did not find, are read. The
// objects were read by the caller's client in that check: the watch tells
// nothing the caller could not read.
type Pending struct {
	watch Watch
	last  []ObjectStatus

	mu       sync.Mutex
	answered map[ObjectRef]versions.Health
}

// NewPending returns the Verdicts of a check that follows one whose
// objects not healthy were last, from watch.
func NewPending(watch Watch, last []ObjectStatus) *Pending {
	return &Pending{watch: watch, last: last}
}

// Verdict returns the watch's health of the object ref names, when it
// holds the object at the generation the last check saw or a later one.
func (p *Pending) Verdict(ctx context.Context, ref ObjectRef, gvk schema.GroupVersionKind) (ObjectStatus, bool) {
	for _, last := range p.last {
		if last.Ref != ref || last.ResourceVersion == "" {
			continue
		}
		h, ok := p.watch.Health(ctx, gvk, ref.Namespace, ref.Name)
		if !ok || h.Generation < last.Generation {
			return ObjectStatus{}, false
		}
		p.mu.Lock()
		if p.answered == nil {
			p.answered = map[ObjectRef]versions.Health{}
		}
		p.answered[ref] = h
		p.mu.Unlock()
		return ObjectStatus{Ref: ref, Status: Status(h.Status), Message: h.Message,
			ResourceVersion: h.ResourceVersion, Generation: h.Generation}, true
	}
	return ObjectStatus{}, false
}

// Answered returns what the watch answered, by object: the version and
// fingerprint at which each was judged.
func (p *Pending) Answered() map[ObjectRef]versions.Health {
	p.mu.Lock()
	defer p.mu.Unlock()
	return maps.Clone(p.answered)
}
