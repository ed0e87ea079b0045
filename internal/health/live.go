package health

import (
	"context"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/windlass-dev/windlass/internal/inventory"
)

// LiveReader returns a reader that answers from live (objects by inventory
// ID: read earlier in the same run, or returned by the apply that wrote
// them) when it holds the object asked for at the same group, version and
// kind, and from reader otherwise. A check right after an apply then reads
// only what the apply did not return.
func LiveReader(live map[string]*unstructured.Unstructured, reader client.Reader) client.Reader {
	if len(live) == 0 {
		return reader
	}
	return liveReader{Reader: reader, live: live}
}

type liveReader struct {
	client.Reader
	live map[string]*unstructured.Unstructured
}

// Get answers from the live objects when they hold key at the kind asked
// for, and from the wrapped reader otherwise.
func (l liveReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return l.Reader.Get(ctx, key, obj, opts...)
	}
	gvk := u.GroupVersionKind()
	id := inventory.ObjMetadata{Namespace: key.Namespace, Name: key.Name, Group: gvk.Group, Kind: gvk.Kind}.ID()
	found, ok := l.live[id]
	if !ok || found.GroupVersionKind() != gvk {
		return l.Reader.Get(ctx, key, obj, opts...)
	}
	u.Object = found.DeepCopy().Object
	return nil
}

// WithLive returns a Checker like c whose reads are answered from live
// first (see LiveReader).
func (c *Checker) WithLive(live map[string]*unstructured.Unstructured) *Checker {
	out := *c
	out.reader = LiveReader(live, c.reader)
	return &out
}
