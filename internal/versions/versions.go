// Package versions tells the resourceVersion that the objects an applier
// owns have now, from metadata-only watches of the objects that carry its
// owner label (or that another label selector selects, such as Helm's
// release Secrets): an applier that remembers the version it last saw an object
// at knows, without a request, that nothing about it changed. A watch
// starts on the first question about a kind and keeps only names and
// versions, so that it holds a few hundred bytes per owned object and
// nothing of the objects that are not owned.
package versions

import (
	"context"
	"fmt"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Cache answers the resourceVersion of labelled objects. It is a manager
// Runnable: its watches run once it is started.
type Cache struct {
	cache cache.Cache
}

// New returns a Cache of the objects that selector selects (a label
// selector: "owner=helm"; a bare key selects the objects that carry it,
// whatever its value), on the cluster of cfg, whose kinds mapper resolves.
func New(cfg *rest.Config, mapper apimeta.RESTMapper, selector string) (*Cache, error) {
	selected, err := labels.Parse(selector)
	if err != nil {
		return nil, fmt.Errorf("versions: %w", err)
	}
	if selected.Empty() {
		return nil, fmt.Errorf("versions: the selector %q selects every object", selector)
	}
	c, err := cache.New(cfg, cache.Options{
		Mapper:                      mapper,
		DefaultLabelSelector:        selected,
		DefaultTransform:            nameAndVersion,
		ReaderFailOnMissingInformer: true,
	})
	if err != nil {
		return nil, fmt.Errorf("versions: %w", err)
	}
	return &Cache{cache: c}, nil
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
	obj := &metav1.PartialObjectMetadata{}
	obj.SetGroupVersionKind(gvk)
	inf, err := c.cache.GetInformer(ctx, obj, cache.BlockUntilSynced(false))
	if err != nil || !inf.HasSynced() {
		return "", false
	}
	if err := c.cache.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, obj); err != nil {
		return "", false
	}
	return obj.GetResourceVersion(), true
}

// Synced tells whether the watch of kind gvk has synced, so that an object
// it does not hold does not exist (as far as the watch has seen). The
// first question about a kind starts its watch and answers false.
func (c *Cache) Synced(ctx context.Context, gvk schema.GroupVersionKind) bool {
	obj := &metav1.PartialObjectMetadata{}
	obj.SetGroupVersionKind(gvk)
	inf, err := c.cache.GetInformer(ctx, obj, cache.BlockUntilSynced(false))
	return err == nil && inf.HasSynced()
}

// nameAndVersion keeps of a watched object its kind, name, namespace and
// resourceVersion.
func nameAndVersion(o any) (any, error) {
	m, ok := o.(*metav1.PartialObjectMetadata)
	if !ok {
		return o, nil
	}
	return &metav1.PartialObjectMetadata{TypeMeta: m.TypeMeta, ObjectMeta: metav1.ObjectMeta{
		Name: m.Name, Namespace: m.Namespace, ResourceVersion: m.ResourceVersion,
	}}, nil
}
