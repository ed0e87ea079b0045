package versions

import (
	"context"
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// A cache made WithHealth watches the whole objects of the kinds whose
// health it judges (a Deployment, whose health is in its status), judges
// each as its watch delivers it, and keeps the verdict beside the version:
// a health check that waits for such an object to become healthy learns
// that it has from the watch, with no request. The verdict is kept, not the
// object: what the cache holds per object stays a few hundred bytes.

// Annotations of a kept object that hold its health; never written to the
// API server.
const (
	healthAnnotation        = "versions.windlass.dev/health"
	healthMessageAnnotation = "versions.windlass.dev/health-message"
	fingerprintAnnotation   = "versions.windlass.dev/fingerprint"
)

// JudgeFunc returns the health of a whole object (a status such as
// "Current") and a message that explains it.
type JudgeFunc func(obj *unstructured.Unstructured) (status, message string)

type healthRules struct {
	judge       JudgeFunc
	kinds       func(schema.GroupKind) bool
	fingerprint func(*unstructured.Unstructured) string
}

// WithHealth makes the cache watch the whole objects of the kinds that
// kinds selects, rather than their metadata, and keep for each the health
// that judge gives it, which Health answers. The kinds should be those
// whose objects are small and whose health is read often.
//
// fingerprint, when not nil, digests what an applier declared of an object
// (ssa.FingerprintAs): the cache keeps that too, so that an applier learns
// from the watch alone that a write since its apply (the object's status)
// left what it declared as it was.
func WithHealth(judge JudgeFunc, kinds func(schema.GroupKind) bool, fingerprint func(*unstructured.Unstructured) string) Option {
	return func(o *options) { o.health = &healthRules{judge: judge, kinds: kinds, fingerprint: fingerprint} }
}

// judges tells whether the cache judges the health of kind gk.
func (h *healthRules) judges(gk schema.GroupKind) bool {
	return h != nil && h.kinds(gk)
}

// annotate adds the health of obj to annotations.
func (h *healthRules) annotate(obj *unstructured.Unstructured, annotations map[string]string) {
	if !h.judges(obj.GroupVersionKind().GroupKind()) {
		return
	}
	status, message := h.judge(obj)
	annotations[healthAnnotation] = status
	if message != "" {
		annotations[healthMessageAnnotation] = message
	}
	if h.fingerprint != nil {
		annotations[fingerprintAnnotation] = h.fingerprint(obj)
	}
}

// Health is an object's health as the watch last delivered the object.
type Health struct {
	// ResourceVersion and Generation are those of the object judged.
	ResourceVersion string
	Generation      int64
	// Status and Message are what the cache's JudgeFunc returned.
	Status, Message string
	// Fingerprint is the object's fingerprint, when the cache was given
	// a function to compute it.
	Fingerprint string
}

// Health returns the health of the object, when the cache judges its kind
// (see WithHealth), the watch of the kind has synced and holds it. The
// first question about a kind starts its watch and answers false.
func (c *Cache) Health(ctx context.Context, gvk schema.GroupVersionKind, namespace, name string) (Health, bool) {
	if !c.health.judges(gvk.GroupKind()) {
		return Health{}, false
	}
	obj, ok := c.held(ctx, gvk, client.ObjectKey{Namespace: namespace, Name: name})
	if !ok {
		return Health{}, false
	}
	annotations := obj.GetAnnotations()
	h := Health{ResourceVersion: obj.GetResourceVersion(), Generation: obj.GetGeneration(),
		Status: annotations[healthAnnotation], Message: annotations[healthMessageAnnotation],
		Fingerprint: annotations[fingerprintAnnotation]}
	return h, h.Status != ""
}

// HealthChanged is told the kind and key of an object whose health, as the
// watch judges it, changed, or that the watch holds for the first time.
type HealthChanged func(gvk schema.GroupVersionKind, key types.NamespacedName)

// NotifyHealth makes the cache tell fn of every object of a kind it judges
// that its watch holds for the first time (when it starts, or the object is
// created) or whose health changes, from then on. fn runs on the watch's own
// goroutine: it must not block.
func (c *Cache) NotifyHealth(fn HealthChanged) {
	c.listeners.add(fn)
}

// listeners are the HealthChanged functions of a cache.
type listeners struct {
	mu  sync.RWMutex
	fns []HealthChanged
}

func (l *listeners) add(fn HealthChanged) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.fns = append(l.fns, fn)
}

// tell calls every listener with obj, an object the watch of gvk keeps.
func (l *listeners) tell(gvk schema.GroupVersionKind, obj any) {
	kept, ok := obj.(client.Object)
	if !ok {
		return
	}
	key := types.NamespacedName{Namespace: kept.GetNamespace(), Name: kept.GetName()}
	l.mu.RLock()
	defer l.mu.RUnlock()
	for _, fn := range l.fns {
		fn(gvk, key)
	}
}

// handler returns the handler of the watch of gvk that tells the listeners
// of the objects it holds for the first time (a listener may have asked
// about one before the watch held it), and of those whose health changed.
func (l *listeners) handler(gvk schema.GroupVersionKind) toolscache.ResourceEventHandler {
	return toolscache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) { l.tell(gvk, obj) },
		UpdateFunc: func(old, obj any) {
			if healthOf(old) != healthOf(obj) {
				l.tell(gvk, obj)
			}
		},
	}
}

// healthOf returns the health that the cache keeps on obj.
func healthOf(obj any) string {
	if kept, ok := obj.(client.Object); ok {
		return kept.GetAnnotations()[healthAnnotation]
	}
	return ""
}
