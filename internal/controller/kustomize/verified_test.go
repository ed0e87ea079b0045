package kustomize

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	kustomizev1 "github.com/windlass-dev/windlass/api/kustomize/v1"
	"github.com/windlass-dev/windlass/internal/health"
	"github.com/windlass-dev/windlass/internal/inventory"
	"github.com/windlass-dev/windlass/internal/ssa"
)

// Two applied objects of the tests below, and their health references.
var (
	entryA = inventory.Entry{ID: "ns_a__ConfigMap", Version: "v1"}
	entryB = inventory.Entry{ID: "ns_b_apps_Deployment", Version: "v1"}
	refA   = health.ObjectRef{APIVersion: "v1", Kind: "ConfigMap", Namespace: "ns", Name: "a"}
	refB   = health.ObjectRef{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "ns", Name: "b"}
)

// TestCertified: status.verified is written only when every object of the
// inventory was found as applied at a known version, and healthy at that
// version when health is checked.
func TestCertified(t *testing.T) {
	at := func(e inventory.Entry, version string) ssa.Applied {
		return ssa.Applied{Entry: e, Fingerprint: "owned:x", ResourceVersion: version}
	}
	both := []inventory.Entry{entryA, entryB}
	tests := []struct {
		name    string
		objects []ssa.Applied
		entries []inventory.Entry
		refs    []health.ObjectRef
		healthy map[health.ObjectRef]string
		want    bool
	}{
		{name: "no health check", objects: []ssa.Applied{at(entryA, "1"), at(entryB, "2")}, entries: both, want: true},
		{name: "healthy at the applied versions", objects: []ssa.Applied{at(entryA, "1"), at(entryB, "2")}, entries: both,
			refs: []health.ObjectRef{refA, refB}, healthy: map[health.ObjectRef]string{refA: "1", refB: "2"}, want: true},
		{name: "healthy at an older version", objects: []ssa.Applied{at(entryA, "1"), at(entryB, "3")}, entries: both,
			refs: []health.ObjectRef{refA, refB}, healthy: map[health.ObjectRef]string{refA: "1", refB: "2"}},
		{name: "not known healthy", objects: []ssa.Applied{at(entryA, "1"), at(entryB, "2")}, entries: both,
			refs: []health.ObjectRef{refB}, healthy: map[health.ObjectRef]string{refA: "1"}},
		{name: "a checked object that is not applied is checked again", objects: []ssa.Applied{at(entryA, "1")},
			entries: []inventory.Entry{entryA}, refs: []health.ObjectRef{refA, refB},
			healthy: map[health.ObjectRef]string{refA: "1"}, want: true},
		{name: "an object without a version", objects: []ssa.Applied{at(entryA, "1"), at(entryB, "")}, entries: both},
		{name: "an object applied with the Ignore policy", entries: both,
			objects: []ssa.Applied{at(entryA, "1"), {Entry: entryB, Fingerprint: "ignored", ResourceVersion: "2"}}},
		{name: "an inventory entry not applied", objects: []ssa.Applied{at(entryA, "1")}, entries: both},
		{name: "an applied object not in the inventory", objects: []ssa.Applied{at(entryA, "1"), at(entryB, "2")},
			entries: []inventory.Entry{entryA, {ID: "ns_c__ConfigMap", Version: "v1"}}},
		{name: "nothing applied", want: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(certified(tt.objects, tt.entries, tt.refs, tt.healthy)).To(Equal(tt.want))
		})
	}
}

// TestObjectsDigest: the digest of the objects does not depend on their
// order, and changes with any entry or version.
func TestObjectsDigest(t *testing.T) {
	g := NewWithT(t)
	a, b := ssa.Applied{Entry: entryA, ResourceVersion: "1"}, ssa.Applied{Entry: entryB, ResourceVersion: "2"}
	digest := objectsDigest([]ssa.Applied{a, b})
	g.Expect(digest).To(HavePrefix("sha256:"))
	g.Expect(objectsDigest([]ssa.Applied{b, a})).To(Equal(digest))
	moved := b
	moved.ResourceVersion = "3"
	g.Expect(objectsDigest([]ssa.Applied{a, moved})).NotTo(Equal(digest))
	other := b
	other.Entry.Version = "v2"
	g.Expect(objectsDigest([]ssa.Applied{a, other})).NotTo(Equal(digest))
	g.Expect(objectsDigest([]ssa.Applied{a})).NotTo(Equal(digest))
}

// TestRestoreVerified takes the last apply from status.verified: only for
// the inputs it was made from and while every object is at the version it
// records; the objects it says were healthy are then not checked again.
func TestRestoreVerified(t *testing.T) {
	ctx := context.Background()
	objects := []ssa.Applied{{Entry: entryA, ResourceVersion: "1"}, {Entry: entryB, ResourceVersion: "2"}}
	verified := &kustomizev1.VerifiedApply{Inputs: statusDigest("in"), Output: statusDigest("out"), Objects: objectsDigest(objects)}
	unchanged := versionsNow{"ConfigMap/ns/a": "1", "Deployment/ns/b": "2"}
	tests := []struct {
		name     string
		verified *kustomizev1.VerifiedApply
		inputs   string
		versions VersionWatch
		wait     bool
		want     bool
	}{
		{name: "nothing changed", verified: verified, inputs: "in", versions: unchanged, want: true},
		{name: "nothing changed, with health checks", verified: verified, inputs: "in", versions: unchanged, wait: true, want: true},
		{name: "an object was written since", verified: verified, inputs: "in",
			versions: versionsNow{"ConfigMap/ns/a": "1", "Deployment/ns/b": "5"}},
		{name: "an object is gone", verified: verified, inputs: "in", versions: versionsNow{"ConfigMap/ns/a": "1"}},
		{name: "new inputs", verified: verified, inputs: "new", versions: unchanged},
		{name: "no status.verified", inputs: "in", versions: unchanged},
		{name: "no watch of the objects", verified: verified, inputs: "in"},
		{name: "a watch that does not sync", verified: verified, inputs: "in", versions: unsynced{unchanged}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			obj := &kustomizev1.Kustomization{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "app"}}
			obj.Spec.Wait = tt.wait
			obj.Status.Verified = tt.verified
			obj.Status.Inventory = &kustomizev1.ResourceInventory{Entries: []kustomizev1.ResourceRef{
				{ID: entryA.ID, Version: entryA.Version}, {ID: entryB.ID, Version: entryB.Version}}}
			r := &KustomizationReconciler{Versions: tt.versions}
			key := types.NamespacedName{Namespace: "ns", Name: "app"}

			st, ok := r.restoreVerified(ctx, obj, tt.inputs)
			g.Expect(ok).To(Equal(tt.want))
			remembered, kept := r.applied.get(key)
			g.Expect(kept).To(Equal(tt.want), "the memory is kept only when restored")
			if !tt.want {
				return
			}
			g.Expect(remembered).To(Equal(st))
			g.Expect(st.inputs).To(Equal("in"))
			g.Expect(st.output).To(Equal("out"))
			g.Expect(st.objects).To(Equal(objects))
			g.Expect(st.inventory).To(Equal(obj.Status.Inventory))
			toCheck := r.healthy.toCheck(ctx, key, []health.ObjectRef{refA, refB}, tt.versions)
			if tt.wait {
				g.Expect(toCheck).To(BeEmpty(), "status.verified says they were healthy at these versions")
			} else {
				g.Expect(toCheck).To(HaveLen(2), "without health checks, nothing is known of their health")
			}
		})
	}
}

// unsynced is a VersionWatch whose watches never sync.
type unsynced struct{ versionsNow }

func (unsynced) WaitForSync(context.Context, schema.GroupVersionKind) bool { return false }

// TestVerifiedApplyLeavesSecretsOut: no digest of the inputs goes to the
// status when a Secret is among them.
func TestVerifiedApplyLeavesSecretsOut(t *testing.T) {
	g := NewWithT(t)
	plain := &kustomizev1.Kustomization{}
	g.Expect(secretInputs(plain)).To(BeFalse())
	fromConfigMap := &kustomizev1.Kustomization{Spec: kustomizev1.KustomizationSpec{PostBuild: &kustomizev1.PostBuild{
		SubstituteFrom: []kustomizev1.SubstituteReference{{Kind: "ConfigMap", Name: "vars"}}}}}
	g.Expect(secretInputs(fromConfigMap)).To(BeFalse())
	fromSecret := fromConfigMap.DeepCopy()
	fromSecret.Spec.PostBuild.SubstituteFrom = append(fromSecret.Spec.PostBuild.SubstituteFrom,
		kustomizev1.SubstituteReference{Kind: "Secret", Name: "vars"})
	g.Expect(secretInputs(fromSecret)).To(BeTrue())
	decrypted := &kustomizev1.Kustomization{Spec: kustomizev1.KustomizationSpec{Decryption: &kustomizev1.Decryption{Provider: "sops"}}}
	g.Expect(secretInputs(decrypted)).To(BeTrue())

	// A Kustomization with a decryption Secret, whose last apply is
	// remembered and certified, still gets no status.verified.
	key := types.NamespacedName{Namespace: "ns", Name: "app"}
	decrypted.Namespace, decrypted.Name = key.Namespace, key.Name
	r := &KustomizationReconciler{Versions: versionsNow{}}
	r.applied.set(key, appliedState{inputs: "in", output: "out"})
	g.Expect(r.verifiedApply(decrypted, &buildInputs{digest: "in"})).To(BeNil())
	plain.Namespace, plain.Name = key.Namespace, key.Name
	g.Expect(r.verifiedApply(plain, &buildInputs{digest: "in"})).To(Equal(&kustomizev1.VerifiedApply{
		Inputs: "sha256:in", Output: "sha256:out", Objects: objectsDigest(nil)}))
}
