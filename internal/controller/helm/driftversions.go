package helm

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	helmv2 "github.com/windlass-dev/windlass/api/helm/v2"
	"github.com/windlass-dev/windlass/internal/inventory"
	"github.com/windlass-dev/windlass/internal/versions"
)

// FieldsReader answers the fields version of an object: the digest of the
// helm controller's entry in its managed fields (see versions.FieldsDigest
// and versions.Cache.FieldsVersion).
type FieldsReader interface {
	FieldsVersion(ctx context.Context, gvk schema.GroupVersionKind, namespace, name string) (string, bool)
}

// syncedVersions remembers, per HelmRelease, the fields version at which
// each object of its deployed release was last found without drift, and
// against what: the release (name, namespace, version) and the HelmRelease's
// generation (its drift detection mode and ignore rules). An object still
// at that fields version, compared against the same, cannot have drifted
// since: whatever was written to it since (its status, a field of another
// manager) changed none of the fields the release applied, so drift
// detection leaves it out and makes no request for it. Whatever the watch
// does not hold (an object deleted, a kind it does not watch yet) is
// compared as before.
type syncedVersions struct {
	seen versions.Seen[inventory.ObjMetadata]
}

// driftBasis names what the objects of sc's deployed release are compared
// against for obj.
func driftBasis(obj *helmv2.HelmRelease, sc *releaseScope) string {
	return fmt.Sprintf("%s/%s.v%d@%d", sc.last.Namespace, sc.last.Name, sc.last.Version, obj.Generation)
}

// toCheck returns the objects of objs that drift detection must compare:
// all of them, but those that versions says are still at the fields
// version they were last found without drift against basis.
func (s *syncedVersions) toCheck(ctx context.Context, key types.NamespacedName, basis string,
	objs []*unstructured.Unstructured, versions FieldsReader) []*unstructured.Unstructured {
	known := s.seen.Known(key, basis)
	if len(known) == 0 {
		return objs
	}
	out := make([]*unstructured.Unstructured, 0, len(objs))
	for _, o := range objs {
		seen, ok := known[inventory.ObjMetadataOf(o)]
		if ok {
			if now, found := versions.FieldsVersion(ctx, o.GroupVersionKind(), o.GetNamespace(), o.GetName()); found && now == seen {
				continue
			}
		}
		out = append(out, o)
	}
	return out
}

// record remembers the objects that the detection against basis found
// without drift (inSync, with their versions) and forgets the drifted
// ones; the objects it left out keep what was remembered of them.
func (s *syncedVersions) record(key types.NamespacedName, basis string, inSync map[inventory.ObjMetadata]string, drifted []inventory.ObjMetadata) {
	s.seen.Record(key, basis, inSync, drifted)
}

// forget drops what is remembered of the HelmRelease key.
func (s *syncedVersions) forget(key types.NamespacedName) {
	s.seen.Forget(key)
}
