// Package versions tells the resourceVersion that the objects an applier
// owns have now, from watches (of their metadata, mostly) of the objects
// that carry its owner label (or that another label selector selects, such
// as Helm's release Secrets): an applier that remembers the version it last
// saw an object at knows, without a request, that nothing about it changed.
// A watch starts on the first question about a kind and keeps only names
// and versions (and, for a cache made WithFieldsOf, a digest of one field
// manager's entry; for one made WithHealth, the health of the objects of
// some kinds), so that it holds a few hundred bytes per owned object and
// nothing of the objects that are not owned.
package versions

import (
	"context"
	"fmt"
	"sync"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Cache answers the resourceVersion of labelled objects. It is a manager
// Runnable: its watches run once it is started.
type Cache struct {
	cache cache.Cache
	// fieldManager is the manager whose FieldsDigest the cache keeps, if
	// any (see WithFieldsOf).
	fieldManager string
	// health judges the objects of some kinds as the watch delivers them,
	// if set (see WithHealth).
	health *healthRules
	// unsynced holds the kinds whose watch did not sync within a wait
	// (see WaitForSync).
	unsynced sync.Map
	// failures tells the watches that failed since they started.
	failures failures
	// listeners are told of the objects whose health changed (see
	// NotifyHealth); told holds the kinds whose watch tells them.
	listeners listeners
	told      sync.Map
}

// New returns a Cache of the objects that selector selects (a label
// selector: "owner=helm"; a bare key selects the objects that carry it,
// whatever its value), on the cluster of cfg, whose kinds mapper resolves.
func New(cfg *rest.Config, mapper apimeta.RESTMapper, selector string, opts ...Option) (*Cache, error) {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	selected, err := labels.Parse(selector)
	if err != nil {
		return nil, fmt.Errorf("versions: %w", err)
	}
	if selected.Empty() {
		return nil, fmt.Errorf("versions: the selector %q selects every object", selector)
	}
	c := &Cache{fieldManager: o.fieldManager, health: o.health}
	c.cache, err = cache.New(cfg, cache.Options{
		Mapper:                      mapper,
		DefaultLabelSelector:        selected,
		DefaultTransform:            keep(o.fieldManager, o.health),
		DefaultWatchErrorHandler:    c.watchFailed,
		ReaderFailOnMissingInformer: true,
	})
	if err != nil {
		return nil, fmt.Errorf("versions: %w", err)
	}
	return c, nil
}

// Start runs the watches until ctx ends.
func (c *Cache) Start(ctx context.Context) error {
	return c.cache.Start(ctx)
}

// ResourceVersion returns the resourceVersion of the object, when the
// watch of its kind has synced and holds it. The first question about a
// kind starts its watch and answers false: the caller reads the object
// itself, as it does for any object the watch does not hold.
func (c *Cache) ResourceVersion(ctx context.Context, gvk schema.GroupVersionKind, namespace, name string) (string, bool) {
	obj, ok := c.held(ctx, gvk, client.ObjectKey{Namespace: namespace, Name: name})
	if !ok {
		return "", false
	}
	return obj.GetResourceVersion(), true
}

// held returns what the cache holds of the object, when the watch of its
// kind has synced and holds it; the first question about a kind starts its
// watch.
func (c *Cache) held(ctx context.Context, gvk schema.GroupVersionKind, key client.ObjectKey) (client.Object, bool) {
	if !c.Synced(ctx, gvk) {
		return nil, false
	}
	obj := c.watched(gvk)
	if err := c.cache.Get(ctx, key, obj); err != nil {
		return nil, false
	}
	return obj, true
}

// watched returns an empty object of kind gvk, of the type its watch
// delivers: the whole object for the kinds the cache judges the health of
// (see WithHealth), the metadata for the others.
func (c *Cache) watched(gvk schema.GroupVersionKind) client.Object {
	if c.health.judges(gvk.GroupKind()) {
		obj := &unstructured.Unstructured{}
		obj.SetGroupVersionKind(gvk)
		return obj
	}
	obj := &metav1.PartialObjectMetadata{}
	obj.SetGroupVersionKind(gvk)
	return obj
}

// Synced tells whether the watch of kind gvk has synced, so that an object
// it does not hold does not exist (as far as the watch has seen). The
// first question about a kind starts its watch and answers false.
func (c *Cache) Synced(ctx context.Context, gvk schema.GroupVersionKind) bool {
	inf, err := c.informer(ctx, gvk)
	return err == nil && inf.HasSynced()
}

// Watch starts the watch of kind gvk, unless it has started, and returns
// without waiting for it to sync. A caller that has just written objects
// of the kind, and will ask about them later, calls it so that the watch
// holds them by then: otherwise the first question starts the watch, and
// the questions asked until it syncs are answered false.
func (c *Cache) Watch(ctx context.Context, gvk schema.GroupVersionKind) {
	_, _ = c.informer(ctx, gvk)
}

// WaitForSync starts the watch of kind gvk, unless it has started, and
// waits until it has synced, its list or watch fails (see failures), or
// ctx ends. It tells whether it has synced. A kind whose watch did not
// sync within one wait is not waited for again: later calls answer at
// once, so that a watch that cannot sync (its list refused, say) holds up
// one caller, not each.
func (c *Cache) WaitForSync(ctx context.Context, gvk schema.GroupVersionKind) bool {
	inf, err := c.informer(ctx, gvk)
	if err != nil {
		return false
	}
	if _, gaveUp := c.unsynced.Load(gvk); gaveUp || inf.HasSynced() {
		return inf.HasSynced()
	}
	ended := func() bool { return inf.HasSynced() || c.failedSince(gvk) }
	if !toolscache.WaitForCacheSync(ctx.Done(), ended) || !inf.HasSynced() {
		c.unsynced.Store(gvk, struct{}{})
		return inf.HasSynced()
	}
	return true
}

// informer returns the informer of the watch of kind gvk, started if it
// had not.
func (c *Cache) informer(ctx context.Context, gvk schema.GroupVersionKind) (cache.Informer, error) {
	c.failures.start(gvk)
	inf, err := c.cache.GetInformer(ctx, c.watched(gvk), cache.BlockUntilSynced(false))
	if err != nil || !c.health.judges(gvk.GroupKind()) {
		return inf, err
	}
	if _, told := c.told.LoadOrStore(gvk, true); !told {
		if _, err := inf.AddEventHandler(c.listeners.handler(gvk)); err != nil {
			c.told.Delete(gvk)
			return nil, fmt.Errorf("versions: telling the health of %s: %w", gvk.Kind, err)
		}
	}
	return inf, nil
}

// keep returns the transform that keeps of a watched object its kind,
// name, namespace, resourceVersion and generation, the FieldsDigest of
// fieldManager when there is one, and, for a whole object whose kind
// health judges, its health. Like every informer transform it may be
// given what it returned before, and returns it unchanged.
func keep(fieldManager string, health *healthRules) func(o any) (any, error) {
	return func(o any) (any, error) {
		obj, ok := o.(client.Object)
		if !ok || obj.GetUID() == "" {
			// Not an object of the API server's (which all have a
			// UID): one kept already, which the informer may pass
			// again.
			return o, nil
		}
		annotations := map[string]string{}
		if fieldManager != "" {
			if digest := FieldsDigest(obj, fieldManager); digest != "" {
				annotations[fieldsAnnotation] = digest
			}
		}
		switch obj := obj.(type) {
		case *metav1.PartialObjectMetadata:
			kept := &metav1.PartialObjectMetadata{TypeMeta: obj.TypeMeta}
			keepMetadata(kept, obj, annotations)
			return kept, nil
		case *unstructured.Unstructured:
			health.annotate(obj, annotations)
			kept := &unstructured.Unstructured{}
			kept.SetGroupVersionKind(obj.GroupVersionKind())
			keepMetadata(kept, obj, annotations)
			return kept, nil
		}
		return o, nil
	}
}

// keepMetadata sets on kept the name, namespace, resourceVersion and
// generation of obj, and annotations unless there are none.
func keepMetadata(kept, obj client.Object, annotations map[string]string) {
	kept.SetName(obj.GetName())
	kept.SetNamespace(obj.GetNamespace())
	kept.SetResourceVersion(obj.GetResourceVersion())
	kept.SetGeneration(obj.GetGeneration())
	if len(annotations) > 0 {
		kept.SetAnnotations(annotations)
	}
}
