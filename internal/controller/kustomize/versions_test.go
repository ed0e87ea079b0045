package kustomize

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/windlass-dev/windlass/internal/health"
)

// versionsNow is a VersionReader that knows the versions it holds, by
// kind/namespace/name.
type versionsNow map[string]string

func (v versionsNow) ResourceVersion(_ context.Context, gvk schema.GroupVersionKind, namespace, name string) (string, bool) {
	version, ok := v[gvk.Kind+"/"+namespace+"/"+name]
	return version, ok
}

func (versionsNow) Watch(context.Context, schema.GroupVersionKind) {}

func (versionsNow) WaitForSync(context.Context, schema.GroupVersionKind) bool { return true }

// objectsAt is a reader that answers every Get with an object at the
// version it holds for the name.
type objectsAt map[string]string

func (o objectsAt) Get(_ context.Context, key client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	obj.SetName(key.Name)
	obj.SetNamespace(key.Namespace)
	obj.SetResourceVersion(o[key.Name])
	return nil
}

func (o objectsAt) List(context.Context, client.ObjectList, ...client.ListOption) error { return nil }

// TestHealthyVersions checks which objects a health check reads again: an
// object seen Current is skipped while its version stays; one whose
// version moved (its status changed, say), one the watch does not know,
// and one that was not Current are checked.
func TestHealthyVersions(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	key := types.NamespacedName{Namespace: "ns", Name: "app"}
	ref := func(name string) health.ObjectRef {
		return health.ObjectRef{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "ns", Name: name}
	}
	refs := []health.ObjectRef{ref("steady"), ref("moved"), ref("unwatched"), ref("progressing")}
	var h healthyVersions
	g.Expect(h.toCheck(ctx, key, refs, versionsNow{})).To(Equal(refs), "nothing known: every object is checked")

	reads := &recordingReader{Reader: objectsAt{"steady": "1", "moved": "1", "unwatched": "1", "progressing": "1"}}
	for _, r := range refs {
		u := &unstructured.Unstructured{}
		u.SetAPIVersion(r.APIVersion)
		u.SetKind(r.Kind)
		g.Expect(reads.Get(ctx, client.ObjectKey{Namespace: r.Namespace, Name: r.Name}, u)).To(Succeed())
	}
	h.record(key, health.Result{
		{Ref: ref("steady"), Status: health.Current}, {Ref: ref("moved"), Status: health.Current},
		{Ref: ref("unwatched"), Status: health.Current}, {Ref: ref("progressing"), Status: health.InProgress},
	}, reads)

	now := versionsNow{"Deployment/ns/steady": "1", "Deployment/ns/moved": "2", "Deployment/ns/progressing": "1"}
	g.Expect(h.toCheck(ctx, key, refs, now)).To(Equal([]health.ObjectRef{ref("moved"), ref("unwatched"), ref("progressing")}))

	h.forget(key)
	g.Expect(h.toCheck(ctx, key, refs, now)).To(Equal(refs), "forgotten with the Kustomization")
}
