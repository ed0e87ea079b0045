package versions

import (
	"context"
	"encoding/json"
	"hash/fnv"
	"strconv"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// An object's resourceVersion moves with every write to it, its status
// included: a Deployment's moves as its controller rolls it out. What an
// applier declared can only have changed when its own entry in the
// object's managed fields did: a write by anyone else that changes a field
// the applier owns takes that field over (it leaves the applier's set),
// and one that removes it removes it from the set. A cache made
// WithFieldsOf(manager) keeps, beside each version, a digest of that
// entry (FieldsDigest), so that drift detection can tell, without a
// request, that a write since it last looked changed none of the
// applier's fields.

// fieldsAnnotation holds, in a cached object, the FieldsDigest of the
// cache's field manager; never written to the API server.
const fieldsAnnotation = "versions.windlass.dev/fields"

// Option configures New.
type Option func(*options)

type options struct {
	fieldManager string
	health       *healthRules
}

// WithFieldsOf makes the cache keep the FieldsDigest of manager for each
// object, which FieldsVersion answers.
func WithFieldsOf(manager string) Option {
	return func(o *options) { o.fieldManager = manager }
}

// FieldsDigest identifies what manager applied to obj: the object's UID
// and manager's entries for the object itself (not its status), with the
// fields each owns and when it last wrote them. It is empty when manager
// has no such entry.
func FieldsDigest(obj metav1.Object, manager string) string {
	var own []metav1.ManagedFieldsEntry
	for _, e := range obj.GetManagedFields() {
		if e.Manager == manager && e.Subresource == "" {
			own = append(own, e)
		}
	}
	if len(own) == 0 {
		return ""
	}
	data, err := json.Marshal(own)
	if err != nil {
		return ""
	}
	h := fnv.New64a()
	h.Write([]byte(obj.GetUID()))
	h.Write([]byte{0})
	h.Write(data)
	return strconv.FormatUint(h.Sum64(), 16)
}

// FieldsVersion returns the FieldsDigest of the cache's field manager for
// the object, when the cache was made WithFieldsOf, the watch of its kind
// has synced and holds it, and the manager has an entry in it. The first
// question about a kind starts its watch and answers false.
func (c *Cache) FieldsVersion(ctx context.Context, gvk schema.GroupVersionKind, namespace, name string) (string, bool) {
	if c.fieldManager == "" {
		return "", false
	}
	obj, ok := c.held(ctx, gvk, client.ObjectKey{Namespace: namespace, Name: name})
	if !ok {
		return "", false
	}
	digest := obj.GetAnnotations()[fieldsAnnotation]
	return digest, digest != ""
}
