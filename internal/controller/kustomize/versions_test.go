package kustomize

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

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

	h.record(key, health.Result{
		{Ref: ref("steady"), Status: health.Current, ResourceVersion: "1"}, {Ref: ref("moved"), Status: health.Current, ResourceVersion: "1"},
		{Ref: ref("unwatched"), Status: health.Current, ResourceVersion: "1"}, {Ref: ref("progressing"), Status: health.InProgress, ResourceVersion: "1"},
	})

	now := versionsNow{"Deployment/ns/steady": "1", "Deployment/ns/moved": "2", "Deployment/ns/progressing": "1"}
	g.Expect(h.toCheck(ctx, key, refs, now)).To(Equal([]health.ObjectRef{ref("moved"), ref("unwatched"), ref("progressing")}))

	h.forget(key)
	g.Expect(h.toCheck(ctx, key, refs, now)).To(Equal(refs), "forgotten with the Kustomization")
}
