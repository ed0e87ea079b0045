package source

import (
	"os"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/windlass-dev/windlass/api/meta"
	sourcev1 "github.com/windlass-dev/windlass/api/source/v1"
	sourceextv1beta1 "github.com/windlass-dev/windlass/api/sourceextensions/v1beta1"
	"github.com/windlass-dev/windlass/internal/artifact"
	"github.com/windlass-dev/windlass/internal/reconcile/sourceref"
	"github.com/windlass-dev/windlass/internal/testutil"
)

// TestUnchanged: an artifact whose copy rules read no folder that a new
// revision of its source changed is the one published, not built again;
// anything else is built.
func TestUnchanged(t *testing.T) {
	storage, err := artifact.New(t.TempDir(), "127.0.0.1:9", time.Hour, 2)
	if err != nil {
		t.Fatal(err)
	}
	repo := &sourcev1.GitRepository{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "mono"}}
	archive := func(files map[string]string, revision string) (meta.Artifact, string) {
		dir := testutil.WriteTree(t, files)
		a := storage.NewArtifactFor(sourcev1.GitRepositoryKind, repo, revision, revision+".tar.gz")
		if err := storage.Archive(&a, dir, nil); err != nil {
			t.Fatal(err)
		}
		return a, dir
	}
	one, _ := archive(map[string]string{"apps/a/x.yaml": "a: 1\n", "apps/b/x.yaml": "b: 1\n"}, "one")
	two, tree := archive(map[string]string{"apps/a/x.yaml": "a: 2\n", "apps/b/x.yaml": "b: 1\n"}, "two")
	repo.Status.Artifact = &two

	gen := &sourceextv1beta1.ArtifactGenerator{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "split", UID: "u1", Generation: 3}}
	published := func(name string) (*sourcev1.ExternalArtifact, meta.Artifact) {
		ea := &sourcev1.ExternalArtifact{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: name,
			Labels: map[string]string{sourceextv1beta1.GeneratorLabel: "u1"}}}
		a := storage.NewArtifactFor(sourcev1.ExternalArtifactKind, ea, "", name+"-content.tar.gz")
		if err := storage.Archive(&a, testutil.WriteTree(t, map[string]string{"x.yaml": name}), nil); err != nil {
			t.Fatal(err)
		}
		a.Revision = "latest@" + a.Digest
		ea.Status.Artifact = &a
		gen.Status.Inventory = append(gen.Status.Inventory, sourceextv1beta1.ExternalArtifactReference{Name: name, Namespace: "apps", Digest: a.Digest})
		return ea, a
	}
	eaA, _ := published("a")
	eaB, artifactB := published("b")
	spec := func(name, from string) sourceextv1beta1.OutputArtifact {
		return sourceextv1beta1.OutputArtifact{Name: name, Copy: []sourceextv1beta1.CopyOperation{{From: from, To: "@artifact/"}}}
	}
	scope := func(previous map[string]meta.Artifact) *generatorScope {
		return &generatorScope{previous: previous, sources: map[string]sourceref.Source{"mono": repo}, trees: map[string]string{"mono": tree}}
	}
	r := &ArtifactGeneratorReconciler{Storage: storage}

	t.Run("a folder the commit did not change", func(t *testing.T) {
		g := NewWithT(t)
		got, ok := r.unchanged(gen, scope(map[string]meta.Artifact{"mono": one}), spec("b", "@mono/apps/b/**"), eaB)
		g.Expect(ok).To(BeTrue())
		g.Expect(got).To(Equal(artifactB))
	})
	for name, tc := range map[string]struct {
		sc   *generatorScope
		spec sourceextv1beta1.OutputArtifact
		ea   *sourcev1.ExternalArtifact
	}{
		"the folder the commit changed":      {scope(map[string]meta.Artifact{"mono": one}), spec("a", "@mono/apps/a/**"), eaA},
		"a glob over both folders":           {scope(map[string]meta.Artifact{"mono": one}), spec("b", "@mono/apps/*/x.yaml"), eaB},
		"no complete generation remembered":  {scope(nil), spec("b", "@mono/apps/b/**"), eaB},
		"a revision unknown to this storage": {scope(map[string]meta.Artifact{"mono": {Digest: "sha256:00", Path: one.Path}}), spec("b", "@mono/apps/b/**"), eaB},
		"a revision taken from the source": {scope(map[string]meta.Artifact{"mono": one}), func() sourceextv1beta1.OutputArtifact {
			s := spec("b", "@mono/apps/b/**")
			s.Revision = "@mono"
			return s
		}(), eaB},
		"nothing published yet":                     {scope(map[string]meta.Artifact{"mono": one}), spec("b", "@mono/apps/b/**"), nil},
		"published by another generator":            {scope(map[string]meta.Artifact{"mono": one}), spec("b", "@mono/apps/b/**"), &sourcev1.ExternalArtifact{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "b"}, Status: eaB.Status}},
		"a source the last generation did not have": {scope(map[string]meta.Artifact{"other": one}), spec("b", "@mono/apps/b/**"), eaB},
	} {
		t.Run(name, func(t *testing.T) {
			_, ok := r.unchanged(gen, tc.sc, tc.spec, tc.ea)
			NewWithT(t).Expect(ok).To(BeFalse())
		})
	}
	t.Run("a stored file that does not match its digest", func(t *testing.T) {
		g := NewWithT(t)
		g.Expect(os.WriteFile(storage.LocalPath(artifactB), []byte("tampered"), 0o600)).To(Succeed())
		_, ok := r.unchanged(gen, scope(map[string]meta.Artifact{"mono": one}), spec("b", "@mono/apps/b/**"), eaB)
		g.Expect(ok).To(BeFalse())
	})
	t.Run("what is remembered is of one generation of the spec", func(t *testing.T) {
		g := NewWithT(t)
		var last lastGenerations
		last.set(gen, map[string]meta.Artifact{"mono": one})
		g.Expect(last.get(gen)).To(HaveKeyWithValue("mono", one))
		edited := gen.DeepCopy()
		edited.Generation++
		g.Expect(last.get(edited)).To(BeNil(), "a new spec builds everything")
		last.forget(types.NamespacedName{Namespace: "apps", Name: "split"})
		g.Expect(last.get(gen)).To(BeNil())
	})
}
