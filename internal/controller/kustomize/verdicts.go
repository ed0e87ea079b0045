package kustomize

import (
	"context"
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/windlass-dev/windlass/internal/health"
	kspec "github.com/windlass-dev/windlass/internal/kustomization"
	"github.com/windlass-dev/windlass/internal/ssa"
	"github.com/windlass-dev/windlass/internal/versions"
)

// HealthWatch tells the health of applied objects as a watch last saw
// them: a versions cache made WithHealth.
type HealthWatch interface {
	Health(ctx context.Context, gvk schema.GroupVersionKind, namespace, name string) (versions.Health, bool)
}

// pendingVerdicts answers, in a health check that continues a wait, the
// health of the objects the last check found not healthy, from the watch:
// an object that becomes healthy costs no read. The watch's verdict counts
// only when the object it judged is at least at the generation that check
// saw: a watch that lags behind an apply of this process (which returned
// the new generation) would judge the object before the apply. Objects the
// watch does not hold, or that the last check did not find, are read. The
// objects were read by the tenant's client in that check: the watch tells
// nothing the tenant could not read.
//
// What it answered it keeps (answered), so that the versions of the last
// apply move with the objects' status as they do for the objects read (see
// refreshVersions).
type pendingVerdicts struct {
	watch HealthWatch
	last  []health.ObjectStatus

	mu       sync.Mutex
	answered map[health.ObjectRef]versions.Health
}

// WatchOptions are the options of the versions cache that the reconciler's
// Versions and Health are: the health of the kinds health.Watchable
// selects, with their fingerprints for the reconciler's field manager.
func WatchOptions() []versions.Option {
	return []versions.Option{versions.WithHealth(health.Judge, health.Watchable, func(obj *unstructured.Unstructured) string {
		return ssa.FingerprintAs(obj, kspec.FieldManager)
	})}
}

// Verdict returns the watch's health of the object ref names, when it
// holds the object at the generation the last check saw or a later one.
func (p *pendingVerdicts) Verdict(ctx context.Context, ref health.ObjectRef, gvk schema.GroupVersionKind) (health.ObjectStatus, bool) {
	for _, last := range p.last {
		if last.Ref != ref || last.ResourceVersion == "" {
			continue
		}
		h, ok := p.watch.Health(ctx, gvk, ref.Namespace, ref.Name)
		if !ok || h.Generation < last.Generation {
			return health.ObjectStatus{}, false
		}
		p.mu.Lock()
		if p.answered == nil {
			p.answered = map[health.ObjectRef]versions.Health{}
		}
		p.answered[ref] = h
		p.mu.Unlock()
		return health.ObjectStatus{Ref: ref, Status: health.Status(h.Status), Message: h.Message,
			ResourceVersion: h.ResourceVersion, Generation: h.Generation}, true
	}
	return health.ObjectStatus{}, false
}
