package source

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/windlass-dev/windlass/api/meta"
	sourcev1 "github.com/windlass-dev/windlass/api/source/v1"
	sourceextv1beta1 "github.com/windlass-dev/windlass/api/sourceextensions/v1beta1"
	"github.com/windlass-dev/windlass/internal/conditions"
	"github.com/windlass-dev/windlass/internal/gitserver"
	"github.com/windlass-dev/windlass/internal/testutil"
)

// copyOp is a copy operation of the tests' generators.
func copyOp(from, to string, exclude ...string) sourceextv1beta1.CopyOperation {
	return sourceextv1beta1.CopyOperation{From: from, To: to, Exclude: exclude}
}

// gitSource is a source of the tests' generators.
func gitSource(alias, name string) sourceextv1beta1.SourceReference {
	return sourceextv1beta1.SourceReference{Alias: alias, Kind: sourcev1.GitRepositoryKind, Name: name}
}

// mainBranch makes repo follow the branch main.
func mainBranch(repo *sourcev1.GitRepository) *sourcev1.GitRepository {
	repo.Spec.Reference = &sourcev1.GitRepositoryRef{Branch: "main"}
	return repo
}

// waitForGenerator returns the generator once cond holds for it, with the
// status rules checked.
func waitForGenerator(g *WithT, obj *sourceextv1beta1.ArtifactGenerator,
	cond func(*sourceextv1beta1.ArtifactGenerator) bool) *sourceextv1beta1.ArtifactGenerator {
	return testutil.WaitFor(g, env.Client, obj, cond, artifactGeneratorNegativeConditions...)
}

// generatorReady is a waitFor condition: Ready=True for the current
// generation, from the sources' artifacts digested as sourcesDigest
// unless it is empty.
func generatorReady(o *sourceextv1beta1.ArtifactGenerator) bool {
	return conditions.IsTrue(o, meta.ReadyCondition) && o.Status.ObservedGeneration == o.Generation
}

// externalArtifact returns the ExternalArtifact ns/name, from the API.
func externalArtifact(g *WithT, ns, name string) *sourcev1.ExternalArtifact {
	ea := &sourcev1.ExternalArtifact{}
	g.Expect(env.Client.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, ea)).To(Succeed())
	return ea
}

// eaFiles downloads and extracts the artifact of the ExternalArtifact
// ns/name, and returns its files.
func eaFiles(t *testing.T, g *WithT, ns, name string) map[string]string {
	ea := externalArtifact(g, ns, name)
	g.Expect(ea.Status.Artifact).NotTo(BeNil())
	return artifactFiles(t, g, ea.Status.Artifact)
}

// TestArtifactGenerator_ComposesAndSplits: a generator splits a monorepo
// into one artifact per application and composes another from three
// sources (two repositories and an OCI artifact); a commit to one application's folder changes that
// application's artifact and the composite only, the others keep their
// revision and are not written; an artifact dropped from the spec, and
// then the generator, take their ExternalArtifacts and stored files along.
func TestArtifactGenerator_ComposesAndSplits(t *testing.T) {
	ctx := context.Background()
	g := NewWithT(t)
	ns := env.CreateNamespace(t)
	srv := gitserver.NewForTest(t)
	base := srv.MustStartHTTP(t)
	mono := srv.MustInitRepo(t, "mono.git", "main")
	mono.MustCommit(t, "main", map[string]string{
		"apps/a/deploy.yaml": "app: a\n", "apps/a/README.md": "a\n",
		"apps/b/deploy.yaml": "app: b\n", "README.md": "mono\n",
	}, "apps")
	cfg := srv.MustInitRepo(t, "cfg.git", "main")
	cfgSHA := cfg.MustCommit(t, "main", map[string]string{"envs/prod/configmap.yaml": "env: prod\n"}, "config")
	for name, url := range map[string]string{"mono": base + "/mono.git", "cfg": base + "/cfg.git"} {
		g.Expect(env.Client.Create(ctx, mainBranch(newGitRepository(ns, name, url)))).To(Succeed())
	}
	reg := startCountingRegistry(t)
	push(t, g, reg.host, "frontend:v1", map[string]string{"deploy/web.yaml": "web: 1\n", "docs/x.md": "x\n"}, "main@sha1:"+cfgSHA)
	frontend := newOCIRepository(ns, "frontend", "oci://"+reg.host+"/frontend")
	frontend.Spec.Reference = &sourcev1.OCIRepositoryRef{Tag: "v1"}
	g.Expect(env.Client.Create(ctx, frontend)).To(Succeed())

	gen := &sourceextv1beta1.ArtifactGenerator{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "apps", Labels: map[string]string{"sharding.fluxcd.io/key": "s1"}},
		Spec: sourceextv1beta1.ArtifactGeneratorSpec{
			Sources: []sourceextv1beta1.SourceReference{gitSource("mono", "mono"), gitSource("cfg", "cfg"),
				{Alias: "frontend", Kind: sourcev1.OCIRepositoryKind, Name: "frontend"}},
			OutputArtifacts: []sourceextv1beta1.OutputArtifact{
				{Name: "app-a", OriginRevision: "@mono", Copy: []sourceextv1beta1.CopyOperation{copyOp("@mono/apps/a/**", "@artifact/", "*.md")}},
				{Name: "app-b", OriginRevision: "@mono", Copy: []sourceextv1beta1.CopyOperation{copyOp("@mono/apps/b/**", "@artifact/")}},
				{Name: "composite", Revision: "@cfg", OriginRevision: "@mono", Copy: []sourceextv1beta1.CopyOperation{
					copyOp("@mono/apps/", "@artifact/", "*.md"),
					copyOp("@cfg/envs/prod/configmap.yaml", "@artifact/env.yaml"),
					copyOp("@frontend/deploy/*.yaml", "@artifact/frontend/"),
				}},
			},
			CommonMetadata: &sourceextv1beta1.CommonMetadata{Labels: map[string]string{"team": "apps"}},
		},
	}
	g.Expect(env.Client.Create(ctx, gen)).To(Succeed())
	got := waitForGenerator(g, gen, generatorReady)
	g.Expect(conditions.Get(got, meta.ReadyCondition).Message).To(Equal("generated 3 artifact(s)"))
	g.Expect(got.Status.Inventory).To(HaveLen(3))
	g.Expect(got.Status.Inventory[0].Name).To(Equal("app-a"))
	g.Expect(got.Status.ObservedSourcesDigest).To(HavePrefix("sha256:"))

	g.Expect(eaFiles(t, g, ns, "app-a")).To(Equal(map[string]string{"deploy.yaml": "app: a\n"}))
	g.Expect(eaFiles(t, g, ns, "app-b")).To(Equal(map[string]string{"deploy.yaml": "app: b\n"}))
	g.Expect(eaFiles(t, g, ns, "composite")).To(Equal(map[string]string{
		"apps/a/deploy.yaml": "app: a\n", "apps/b/deploy.yaml": "app: b\n", "env.yaml": "env: prod\n", "frontend/web.yaml": "web: 1\n",
	}))
	a, b, composite := externalArtifact(g, ns, "app-a"), externalArtifact(g, ns, "app-b"), externalArtifact(g, ns, "composite")
	g.Expect(a.Status.Artifact.Revision).To(Equal("latest@" + a.Status.Artifact.Digest))
	g.Expect(a.Status.Artifact.Path).To(HavePrefix("externalartifact/" + ns + "/app-a/"))
	g.Expect(conditions.IsTrue(a, meta.ReadyCondition)).To(BeTrue())
	g.Expect(a.Labels).To(HaveKeyWithValue(sourceextv1beta1.GeneratorLabel, string(got.UID)))
	g.Expect(a.Labels).To(HaveKeyWithValue("team", "apps"))
	g.Expect(a.Labels).To(HaveKeyWithValue("sharding.fluxcd.io/key", "s1"), "the generator's shard key")
	g.Expect(*a.Spec.SourceRef).To(Equal(meta.NamespacedObjectKindReference{
		APIVersion: sourceextv1beta1.GroupVersion.String(), Kind: sourceextv1beta1.ArtifactGeneratorKind, Name: "apps", Namespace: ns,
	}))
	g.Expect(composite.Status.Artifact.Revision).To(Equal("main@sha1:"+cfgSHA), "revision: @cfg")
	monoHead, err := mono.Head("main")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(composite.Status.Artifact.Metadata).To(HaveKeyWithValue(meta.OriginRevisionKey, "main@sha1:"+monoHead), "originRevision: @mono")

	// A commit to application a's folder (and to a file no artifact takes).
	a2 := mono.MustCommit(t, "main", map[string]string{"apps/a/deploy.yaml": "app: a2\n", "README.md": "mono 2\n"}, "a2")
	testutil.RequestReconcile(g, env.Client, &sourcev1.GitRepository{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "mono"}}, "a2")
	g.Eventually(func() map[string]string { return eaFiles(t, g, ns, "app-a") }, timeout, interval).
		Should(Equal(map[string]string{"deploy.yaml": "app: a2\n"}))
	got = waitForGenerator(g, gen, func(o *sourceextv1beta1.ArtifactGenerator) bool {
		return generatorReady(o) && o.Status.ObservedSourcesDigest != got.Status.ObservedSourcesDigest
	})
	b2, composite2 := externalArtifact(g, ns, "app-b"), externalArtifact(g, ns, "composite")
	g.Expect(b2.ResourceVersion).To(Equal(b.ResourceVersion), "app-b is not written: its files did not change")
	g.Expect(b2.Status.Artifact.Revision).To(Equal(b.Status.Artifact.Revision))
	g.Expect(externalArtifact(g, ns, "app-a").Status.Artifact.Metadata).To(HaveKeyWithValue(meta.OriginRevisionKey, "main@sha1:"+a2),
		"the origin of a changed artifact is the commit")
	g.Expect(composite2.Status.Artifact.Digest).NotTo(Equal(composite.Status.Artifact.Digest))
	g.Expect(eaFiles(t, g, ns, "composite")).To(HaveKeyWithValue("apps/a/deploy.yaml", "app: a2\n"))

	// An artifact dropped from the spec goes, with its stored files.
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(gen), gen)).To(Succeed())
	gen.Spec.OutputArtifacts = gen.Spec.OutputArtifacts[:2]
	g.Expect(env.Client.Update(ctx, gen)).To(Succeed())
	waitForGenerator(g, gen, func(o *sourceextv1beta1.ArtifactGenerator) bool {
		return generatorReady(o) && len(o.Status.Inventory) == 2
	})
	g.Eventually(func() bool {
		return apierrors.IsNotFound(env.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: "composite"}, &sourcev1.ExternalArtifact{}))
	}, timeout, interval).Should(BeTrue())
	g.Expect(filepath.Join(storage.BasePath(), "externalartifact", ns, "composite")).NotTo(BeAnExistingFile())

	// Deleting the generator deletes what it generated.
	g.Expect(env.Client.Delete(ctx, gen)).To(Succeed())
	g.Eventually(func() int {
		list := &sourcev1.ExternalArtifactList{}
		g.Expect(env.Client.List(ctx, list, client.InNamespace(ns))).To(Succeed())
		return len(list.Items)
	}, timeout, interval).Should(BeZero())
	g.Eventually(func() bool {
		_, err := os.Stat(filepath.Join(storage.BasePath(), "externalartifact", ns, "app-a"))
		return os.IsNotExist(err)
	}, timeout, interval).Should(BeTrue())
}

// TestArtifactGenerator_Faults: what cannot work stalls, naming why; what
// fails keeps the artifacts last published; a source not there yet is
// waited for.
func TestArtifactGenerator_Faults(t *testing.T) {
	ctx := context.Background()
	g := NewWithT(t)
	ns := env.CreateNamespace(t)
	srv := gitserver.NewForTest(t)
	base := srv.MustStartHTTP(t)
	repo := srv.MustInitRepo(t, "app.git", "main")
	repo.MustCommit(t, "main", map[string]string{"deploy/app.yaml": "app: 1\n"}, "app")
	g.Expect(env.Client.Create(ctx, mainBranch(newGitRepository(ns, "app", base+"/app.git")))).To(Succeed())
	artifacts := func(ops ...sourceextv1beta1.CopyOperation) []sourceextv1beta1.OutputArtifact {
		return []sourceextv1beta1.OutputArtifact{{Name: "out", Copy: ops}}
	}
	newGen := func(name string, sources []sourceextv1beta1.SourceReference, out []sourceextv1beta1.OutputArtifact) *sourceextv1beta1.ArtifactGenerator {
		return &sourceextv1beta1.ArtifactGenerator{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: sourceextv1beta1.ArtifactGeneratorSpec{Sources: sources, OutputArtifacts: out}}
	}
	hasReason := func(conditionType string, status metav1.ConditionStatus, reason string) func(*sourceextv1beta1.ArtifactGenerator) bool {
		return func(o *sourceextv1beta1.ArtifactGenerator) bool {
			c := conditions.Get(o, conditionType)
			return c != nil && c.Status == status && c.Reason == reason && c.ObservedGeneration == o.Generation
		}
	}

	t.Run("what can never work stalls", func(t *testing.T) {
		for name, gen := range map[string]*sourceextv1beta1.ArtifactGenerator{
			"duplicate alias": newGen("dup-alias", []sourceextv1beta1.SourceReference{gitSource("x", "app"), gitSource("x", "app")},
				artifacts(copyOp("@x/deploy/**", "@artifact/"))),
			"unknown alias": newGen("unknown-alias", []sourceextv1beta1.SourceReference{gitSource("x", "app")},
				artifacts(copyOp("@y/deploy/**", "@artifact/"))),
		} {
			t.Run(name, func(t *testing.T) {
				g := NewWithT(t)
				g.Expect(env.Client.Create(ctx, gen)).To(Succeed())
				waitForGenerator(g, gen, hasReason(meta.StalledCondition, metav1.ConditionTrue, sourceextv1beta1.ValidationFailedReason))
			})
		}
	})

	t.Run("the schema refuses a destination that climbs out", func(t *testing.T) {
		g := NewWithT(t)
		gen := newGen("climb", []sourceextv1beta1.SourceReference{gitSource("x", "app")}, artifacts(copyOp("@x/deploy/**", "@artifact/../x")))
		err := env.Client.Create(ctx, gen)
		g.Expect(err).To(HaveOccurred())
		g.Expect(err.Error()).To(ContainSubstring("spec.artifacts[0].copy[0].to"))
	})

	t.Run("a failed build keeps the last artifact", func(t *testing.T) {
		g := NewWithT(t)
		gen := newGen("keeps", []sourceextv1beta1.SourceReference{gitSource("x", "app")}, artifacts(copyOp("@x/deploy/**", "@artifact/")))
		g.Expect(env.Client.Create(ctx, gen)).To(Succeed())
		waitForGenerator(g, gen, generatorReady)
		before := externalArtifact(g, ns, "out")

		g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(gen), gen)).To(Succeed())
		gen.Spec.OutputArtifacts[0].Copy = append(gen.Spec.OutputArtifacts[0].Copy, copyOp("@x/../../etc/passwd", "@artifact/"))
		g.Expect(env.Client.Update(ctx, gen)).To(Succeed())
		got := waitForGenerator(g, gen, hasReason(meta.ReadyCondition, metav1.ConditionFalse, meta.BuildFailedReason))
		g.Expect(conditions.Get(got, meta.ReadyCondition).Message).To(ContainSubstring("must be a relative path that stays inside its tree"))
		g.Expect(conditions.IsTrue(got, sourcev1.BuildFailedCondition)).To(BeTrue())
		g.Expect(conditions.Message(got, sourcev1.BuildFailedCondition)).To(ContainSubstring("artifact 'out': "))
		after := externalArtifact(g, ns, "out")
		g.Expect(after.Status.Artifact).To(Equal(before.Status.Artifact), "the last artifact stays published")
		g.Expect(storage.Verify(*after.Status.Artifact)).To(Succeed(), "and stored")

		g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(gen), gen)).To(Succeed())
		gen.Spec.OutputArtifacts[0].Copy[1] = copyOp("@x/deploy/missing.yaml", "@artifact/")
		g.Expect(env.Client.Update(ctx, gen)).To(Succeed())
		got = waitForGenerator(g, gen, hasReason(meta.ReadyCondition, metav1.ConditionFalse, meta.BuildFailedReason))
		g.Expect(conditions.Get(got, meta.ReadyCondition).Message).To(ContainSubstring("'deploy/missing.yaml' does not exist in source 'x'"))
	})

	t.Run("an ExternalArtifact of another producer is left alone", func(t *testing.T) {
		g := NewWithT(t)
		theirs := &sourcev1.ExternalArtifact{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "theirs"},
			Spec: sourcev1.ExternalArtifactSpec{SourceRef: &meta.NamespacedObjectKindReference{Kind: "Release", Name: "x"}}}
		g.Expect(env.Client.Create(ctx, theirs)).To(Succeed())
		gen := newGen("clash", []sourceextv1beta1.SourceReference{gitSource("x", "app")}, artifacts(copyOp("@x/deploy/**", "@artifact/")))
		gen.Spec.OutputArtifacts[0].Name = "theirs"
		g.Expect(env.Client.Create(ctx, gen)).To(Succeed())
		got := waitForGenerator(g, gen, hasReason(meta.ReadyCondition, metav1.ConditionFalse, meta.ReconciliationFailedReason))
		g.Expect(conditions.Get(got, meta.ReadyCondition).Message).To(ContainSubstring("ExternalArtifact 'theirs' exists and was not generated by this ArtifactGenerator"))
		after := externalArtifact(g, ns, "theirs")
		g.Expect(after.Status.Artifact).To(BeNil())
		g.Expect(after.Labels).NotTo(HaveKey(sourceextv1beta1.GeneratorLabel))
		g.Expect(env.Client.Delete(ctx, gen)).To(Succeed())
		g.Eventually(func() bool {
			return apierrors.IsNotFound(env.Client.Get(ctx, client.ObjectKeyFromObject(gen), gen))
		}, timeout, interval).Should(BeTrue())
		g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(theirs), theirs)).To(Succeed(), "deleting the generator leaves it")
	})

	t.Run("a source not there yet is waited for", func(t *testing.T) {
		g := NewWithT(t)
		gen := newGen("waits", []sourceextv1beta1.SourceReference{gitSource("x", "later")}, artifacts(copyOp("@x/deploy/**", "@artifact/")))
		gen.Spec.OutputArtifacts[0].Name = "waited"
		g.Expect(env.Client.Create(ctx, gen)).To(Succeed())
		got := waitForGenerator(g, gen, hasReason(meta.ReconcilingCondition, metav1.ConditionTrue, meta.ArtifactFailedReason))
		g.Expect(conditions.Get(got, meta.ReadyCondition).Message).To(ContainSubstring("source GitRepository '" + ns + "/later' not found"))
		g.Expect(env.Client.Create(ctx, mainBranch(newGitRepository(ns, "later", base+"/app.git")))).To(Succeed())
		waitForGenerator(g, gen, generatorReady)
		g.Expect(eaFiles(t, g, ns, "waited")).To(Equal(map[string]string{"app.yaml": "app: 1\n"}))
	})

	t.Run("a stored artifact that disappears is generated again", func(t *testing.T) {
		g := NewWithT(t)
		gen := newGen("restore", []sourceextv1beta1.SourceReference{gitSource("x", "app")},
			[]sourceextv1beta1.OutputArtifact{{Name: "restored", Copy: []sourceextv1beta1.CopyOperation{copyOp("@x/deploy/**", "@artifact/")}}})
		g.Expect(env.Client.Create(ctx, gen)).To(Succeed())
		waitForGenerator(g, gen, generatorReady)
		a := externalArtifact(g, ns, "restored").Status.Artifact
		g.Expect(os.Remove(storage.LocalPath(*a))).To(Succeed())
		testutil.RequestReconcile(g, env.Client, gen, time.Now().String())
		g.Eventually(func() error { return storage.Verify(*a) }, timeout, interval).Should(Succeed())
		g.Expect(externalArtifact(g, ns, "restored").Status.Artifact.Digest).To(Equal(a.Digest), "the same content, the same digest")
	})
}

// TestArtifactGenerator_PathPattern: a pathPattern generates the artifacts
// once per folder it matches, named from the folder in lower case, the
// copy operations taking the folder as it is named; a new folder adds its
// artifacts, a folder removed takes its own away. Folders that make one
// name stall the generator; a pattern that matches nothing fails it, and
// the artifacts stay.
func TestArtifactGenerator_PathPattern(t *testing.T) {
	ctx := context.Background()
	g := NewWithT(t)
	ns := env.CreateNamespace(t)
	srv := gitserver.NewForTest(t)
	base := srv.MustStartHTTP(t)
	mono := srv.MustInitRepo(t, "mono.git", "main")
	mono.MustCommit(t, "main", map[string]string{
		"apps/Auth/deploy.yaml": "app: auth\n", "apps/gateway/deploy.yaml": "app: gateway\n", "apps/README.md": "apps\n",
	}, "apps")
	g.Expect(env.Client.Create(ctx, mainBranch(newGitRepository(ns, "mono", base+"/mono.git")))).To(Succeed())
	gen := &sourceextv1beta1.ArtifactGenerator{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "apps"},
		Spec: sourceextv1beta1.ArtifactGeneratorSpec{
			Sources:     []sourceextv1beta1.SourceReference{gitSource("mono", "mono")},
			PathPattern: "@mono/apps/{app}",
			OutputArtifacts: []sourceextv1beta1.OutputArtifact{{Name: "{app}-svc",
				Copy: []sourceextv1beta1.CopyOperation{copyOp("@mono/apps/{app}/**", "@artifact/{app}/")}}},
		},
	}
	g.Expect(env.Client.Create(ctx, gen)).To(Succeed())
	got := waitForGenerator(g, gen, generatorReady)
	g.Expect(got.Status.Inventory).To(HaveLen(2))
	g.Expect(eaFiles(t, g, ns, "auth-svc")).To(Equal(map[string]string{"Auth/deploy.yaml": "app: auth\n"}))
	g.Expect(eaFiles(t, g, ns, "gateway-svc")).To(Equal(map[string]string{"gateway/deploy.yaml": "app: gateway\n"}))
	g.Expect(externalArtifact(g, ns, "auth-svc").Labels).To(HaveKeyWithValue("app", "auth"))

	commit := func(token string, change func()) {
		change()
		testutil.RequestReconcile(g, env.Client, &sourcev1.GitRepository{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "mono"}}, token)
	}
	commit("web", func() { mono.MustCommit(t, "main", map[string]string{"apps/web/deploy.yaml": "app: web\n"}, "web") })
	waitForGenerator(g, gen, func(o *sourceextv1beta1.ArtifactGenerator) bool {
		return generatorReady(o) && len(o.Status.Inventory) == 3
	})
	g.Expect(eaFiles(t, g, ns, "web-svc")).To(Equal(map[string]string{"web/deploy.yaml": "app: web\n"}))
	commit("no-gateway", func() {
		_, err := mono.Remove("main", []string{"apps/gateway/deploy.yaml"}, "no gateway")
		g.Expect(err).NotTo(HaveOccurred())
	})
	waitForGenerator(g, gen, func(o *sourceextv1beta1.ArtifactGenerator) bool {
		return generatorReady(o) && len(o.Status.Inventory) == 2
	})
	g.Eventually(func() bool {
		return apierrors.IsNotFound(env.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: "gateway-svc"}, &sourcev1.ExternalArtifact{}))
	}, timeout, interval).Should(BeTrue())

	commit("clash", func() { mono.MustCommit(t, "main", map[string]string{"apps/WEB/deploy.yaml": "app: WEB\n"}, "clash") })
	got = waitForGenerator(g, gen, func(o *sourceextv1beta1.ArtifactGenerator) bool {
		c := conditions.Get(o, meta.StalledCondition)
		return c != nil && c.Status == metav1.ConditionTrue && c.Reason == sourceextv1beta1.ValidationFailedReason
	})
	g.Expect(conditions.Get(got, meta.ReadyCondition).Message).To(ContainSubstring("folders 'apps/WEB' and 'apps/web' both make the artifact name 'web-svc'"))

	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(gen), gen)).To(Succeed())
	gen.Spec.PathPattern = "@mono/services/{app}"
	g.Expect(env.Client.Update(ctx, gen)).To(Succeed())
	got = waitForGenerator(g, gen, func(o *sourceextv1beta1.ArtifactGenerator) bool {
		c := conditions.Get(o, meta.ReadyCondition)
		return c != nil && c.Reason == meta.BuildFailedReason && c.ObservedGeneration == o.Generation
	})
	g.Expect(conditions.Get(got, meta.ReadyCondition).Message).To(ContainSubstring("matches no folder of source 'mono'"))
	g.Expect(eaFiles(t, g, ns, "auth-svc")).To(HaveLen(1), "the artifacts generated before stay")
}

// TestArtifactGenerator_ClosedGateHoldsNewArtifacts: behind a closed gate a
// generator publishes no new artifact (Blocked=True) and its
// ExternalArtifacts keep their last one; opening the gate publishes the
// new one.
func TestArtifactGenerator_ClosedGateHoldsNewArtifacts(t *testing.T) {
	ctx := context.Background()
	g := NewWithT(t)
	ns := env.CreateNamespace(t)
	setGate(g, ns, "freeze", true)
	srv := gitserver.NewForTest(t)
	base := srv.MustStartHTTP(t)
	repo := srv.MustInitRepo(t, "app.git", "main")
	repo.MustCommit(t, "main", map[string]string{"deploy/app.yaml": "app: 1\n"}, "one")
	g.Expect(env.Client.Create(ctx, mainBranch(newGitRepository(ns, "app", base+"/app.git")))).To(Succeed())
	gen := &sourceextv1beta1.ArtifactGenerator{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "gated"},
		Spec: sourceextv1beta1.ArtifactGeneratorSpec{
			Sources:         []sourceextv1beta1.SourceReference{gitSource("x", "app")},
			OutputArtifacts: []sourceextv1beta1.OutputArtifact{{Name: "out", Copy: []sourceextv1beta1.CopyOperation{copyOp("@x/deploy/**", "@artifact/")}}},
			Gates:           []meta.NamespacedObjectReference{{Name: "freeze"}},
		},
	}
	g.Expect(env.Client.Create(ctx, gen)).To(Succeed())
	waitForGenerator(g, gen, generatorReady)
	before := externalArtifact(g, ns, "out").Status.Artifact

	setGate(g, ns, "freeze", false)
	waitForGenerator(g, gen, func(o *sourceextv1beta1.ArtifactGenerator) bool {
		return conditions.IsTrue(o, meta.BlockedCondition)
	})
	repo.MustCommit(t, "main", map[string]string{"deploy/app.yaml": "app: 2\n"}, "two")
	testutil.RequestReconcile(g, env.Client, &sourcev1.GitRepository{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "app"}}, "two")
	g.Eventually(func() string {
		src := &sourcev1.GitRepository{}
		g.Expect(env.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: "app"}, src)).To(Succeed())
		return src.Status.LastHandledReconcileAt
	}, timeout, interval).Should(Equal("two"))
	testutil.RequestReconcile(g, env.Client, gen, "held")
	got := waitForGenerator(g, gen, func(o *sourceextv1beta1.ArtifactGenerator) bool { return o.Status.LastHandledReconcileAt == "held" })
	g.Expect(conditions.Reason(got, meta.BlockedCondition)).To(Equal(meta.GateClosedReason))
	g.Expect(externalArtifact(g, ns, "out").Status.Artifact).To(Equal(before), "the last artifact stays published")

	setGate(g, ns, "freeze", true)
	g.Eventually(func() map[string]string { return eaFiles(t, g, ns, "out") }, timeout, interval).
		Should(Equal(map[string]string{"app.yaml": "app: 2\n"}))
	waitForGenerator(g, gen, func(o *sourceextv1beta1.ArtifactGenerator) bool {
		return generatorReady(o) && !conditions.Has(o, meta.BlockedCondition)
	})
}
