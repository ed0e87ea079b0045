package source

import (
	"bytes"
	"context"
	"crypto/rand"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/windlass-dev/windlass/api/meta"
	sourcev1 "github.com/windlass-dev/windlass/api/source/v1"
	"github.com/windlass-dev/windlass/internal/archive"
	"github.com/windlass-dev/windlass/internal/conditions"
	"github.com/windlass-dev/windlass/internal/gitserver"
	"github.com/windlass-dev/windlass/internal/metrics"
	"github.com/windlass-dev/windlass/internal/testutil"
)

func bytesReader(b []byte) io.Reader { return bytes.NewReader(b) }

// extract unpacks an artifact into a temp dir and returns the dir.
func extract(t *testing.T, g *WithT, body []byte) string {
	dir := t.TempDir()
	g.Expect(archive.Extract(bytes.NewReader(body), dir)).To(Succeed())
	return dir
}

func TestGitRepository_StoresAndServesArtifact(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.CreateNamespace(t)
	srv := gitserver.NewForTest(t)
	base := srv.MustStartHTTP(t)
	repo := srv.MustInitRepo(t, "app.git", "main")
	sha := repo.MustCommit(t, "main", map[string]string{
		"deploy/app.yaml":   "kind: ConfigMap\n",
		".github/ci.yaml":   "on: push\n",
		"logo.PNG":          "binary",
		"deploy/.keep.yaml": "x: 1\n",
	}, "first commit")

	obj := newGitRepository(ns, "app", base+"/app.git")
	obj.Spec.Reference = &sourcev1.GitRepositoryRef{Branch: "main"}
	fetches := fetchesOf(sourcev1.GitRepositoryKind)
	g.Expect(env.Client.Create(ctx, obj)).To(Succeed())

	got := waitFor(g, obj, readyAt("main@sha1:"+sha))
	expectFetched(g, sourcev1.GitRepositoryKind, fetches, metrics.ResultSuccess)
	g.Expect(conditions.IsTrue(got, sourcev1.ArtifactInStorageCondition)).To(BeTrue())
	g.Expect(conditions.Message(got, meta.ReadyCondition)).To(Equal("stored artifact for revision 'main@sha1:" + sha + "'"))
	g.Expect(got.Finalizers).To(BeEmpty(), "a source carries no finalizer")
	g.Expect(got.Status.Artifact.Path).To(Equal("gitrepository/" + ns + "/app/" + sha + ".tar.gz"))
	g.Expect(got.Status.Artifact.Digest).To(HavePrefix("sha256:"))

	dir := testutil.Extract(t, g, testutil.Download(g, nil, got.Status.Artifact))
	g.Expect(os.ReadFile(filepath.Join(dir, "deploy/app.yaml"))).To(Equal([]byte("kind: ConfigMap\n")))
	g.Expect(filepath.Join(dir, ".github")).NotTo(BeAnExistingFile(), "default excludes apply")
	g.Expect(filepath.Join(dir, "logo.PNG")).NotTo(BeAnExistingFile(), "extensions match in any case")
	g.Expect(filepath.Join(dir, ".git")).NotTo(BeAnExistingFile())

	// A new commit becomes a new artifact when asked to reconcile; the old
	// one is kept within the retention records.
	sha2 := repo.MustCommit(t, "main", map[string]string{"deploy/app.yaml": "kind: Secret\n"}, "second")
	testutil.RequestReconcile(g, env.Client, obj, "now-1")
	got = waitFor(g, obj, readyAt("main@sha1:"+sha2))
	g.Expect(got.Status.LastHandledReconcileAt).To(Equal("now-1"))
	dir = testutil.Extract(t, g, testutil.Download(g, nil, got.Status.Artifact))
	g.Expect(os.ReadFile(filepath.Join(dir, "deploy/app.yaml"))).To(Equal([]byte("kind: Secret\n")))
	// The new artifact is an event; the first, which the status told,
	// was not.
	g.Eventually(func() []string { return testutil.EventMessages(g, env.Client, obj, "") }, timeout, interval).
		Should(ContainElement(ContainSubstring("NewArtifact: stored artifact for commit 'second'")))
	g.Expect(testutil.EventMessages(g, env.Client, obj, "")).NotTo(ContainElement(ContainSubstring("first commit")))
}

func TestGitRepository_NoCloneWhenUnchanged(t *testing.T) {
	g := NewWithT(t)
	srv, _, obj := readyRepository(t, g)
	first := obj.DeepCopy()
	info, err := os.Stat(storage.LocalPath(*first.Status.Artifact))
	g.Expect(err).NotTo(HaveOccurred())

	before, fetches := srv.Requests(), fetchesOf(sourcev1.GitRepositoryKind)
	testutil.RequestReconcile(g, env.Client, obj, "tick")
	got := waitFor(g, obj, func(o *sourcev1.GitRepository) bool { return o.Status.LastHandledReconcileAt == "tick" })
	g.Expect(srv.Requests()-before).To(Equal(int64(1)), "only the remote's refs are listed")
	expectFetched(g, sourcev1.GitRepositoryKind, fetches, metrics.ResultSuccess) // upstream was asked: a fetch
	g.Expect(got.Status.Artifact).To(Equal(first.Status.Artifact))
	after, err := os.Stat(storage.LocalPath(*got.Status.Artifact))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(after.ModTime()).To(Equal(info.ModTime()), "the artifact is not written again")
}

func TestGitRepository_References(t *testing.T) {
	ns := env.CreateNamespace(t)
	srv := gitserver.NewForTest(t)
	base := srv.MustStartHTTP(t)
	repo := srv.MustInitRepo(t, "refs.git", "main")
	c1 := repo.MustCommit(t, "main", map[string]string{"v": "1"}, "one")
	g := NewWithT(t)
	g.Expect(repo.Tag("v1.0.0", c1)).To(Succeed())
	c2 := repo.MustCommit(t, "main", map[string]string{"v": "2"}, "two")
	g.Expect(repo.AnnotatedTag("v1.2.0", c2, "release 1.2.0")).To(Succeed())
	c3 := repo.MustCommit(t, "main", map[string]string{"v": "3"}, "three")
	g.Expect(repo.Tag("v2.0.0", c3)).To(Succeed())
	dev := repo.MustCommit(t, "dev", map[string]string{"v": "dev"}, "dev")
	g.Expect(repo.SetBranch("refs/pull/7/head", dev)).To(Succeed())

	tests := []struct {
		name string
		ref  *sourcev1.GitRepositoryRef
		want string
	}{
		{"branch", &sourcev1.GitRepositoryRef{Branch: "dev"}, "dev@sha1:" + dev},
		{"tag", &sourcev1.GitRepositoryRef{Tag: "v1.0.0"}, "v1.0.0@sha1:" + c1},
		{"annotated tag", &sourcev1.GitRepositoryRef{Tag: "v1.2.0"}, "v1.2.0@sha1:" + c2},
		{"tag beats branch", &sourcev1.GitRepositoryRef{Branch: "dev", Tag: "v1.0.0"}, "v1.0.0@sha1:" + c1},
		{"semver", &sourcev1.GitRepositoryRef{SemVer: "<2.0.0"}, "v1.2.0@sha1:" + c2},
		{"semver beats tag", &sourcev1.GitRepositoryRef{Tag: "v1.0.0", SemVer: ">=1.0.0"}, "v2.0.0@sha1:" + c3},
		{"name", &sourcev1.GitRepositoryRef{Name: "refs/pull/7/head"}, "refs/pull/7/head@sha1:" + dev},
		{"commit", &sourcev1.GitRepositoryRef{Commit: c2}, "sha1:" + c2},
		{"commit on branch", &sourcev1.GitRepositoryRef{Branch: "main", Commit: c1}, "main@sha1:" + c1},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			g := NewWithT(t)
			obj := newGitRepository(ns, "ref-"+strings.ReplaceAll(tt.name, " ", "-"), base+"/refs.git")
			obj.Spec.Reference = tt.ref
			_ = i
			g.Expect(env.Client.Create(context.Background(), obj)).To(Succeed())
			waitFor(g, obj, readyAt(tt.want))
		})
	}
}

func TestGitRepository_InvalidSpecStalls(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.CreateNamespace(t)
	srv := gitserver.NewForTest(t)
	base := srv.MustStartHTTP(t)
	srv.MustInitRepo(t, "app.git", "main").MustCommit(t, "main", map[string]string{"a": "1"}, "one")

	obj := newGitRepository(ns, "bad-semver", base+"/app.git")
	obj.Spec.Reference = &sourcev1.GitRepositoryRef{SemVer: "not a range"}
	g.Expect(env.Client.Create(ctx, obj)).To(Succeed())
	got := waitFor(g, obj, hasCondition(meta.StalledCondition, metav1.ConditionTrue, sourcev1.InvalidSemverReason))
	g.Expect(conditions.Message(got, meta.ReadyCondition)).To(ContainSubstring("invalid semver range 'not a range'"))
	g.Expect(got.Status.ObservedGeneration).To(Equal(got.Generation))

	// No retry storm: a stalled object is not reconciled again until it
	// changes, so the git server is never asked anything.
	g.Consistently(srv.Requests, 2*time.Second, interval).Should(BeZero())

	// The CRD schema refuses what it can express.
	bad := newGitRepository(ns, "ftp", "ftp://example.com/repo.git")
	g.Expect(env.Client.Create(ctx, bad)).To(MatchError(ContainSubstring("spec.url")))
	bad = newGitRepository(ns, "interval", base+"/app.git")
	g.Expect(env.Client.Create(ctx, bad)).To(Succeed())
	g.Expect(env.Client.Patch(ctx, bad, client.RawPatch("application/merge-patch+json",
		[]byte(`{"spec":{"interval":"1y"}}`)))).To(MatchError(ContainSubstring("spec.interval")))
}

func TestGitRepository_HostDownKeepsLastArtifact(t *testing.T) {
	g := NewWithT(t)
	srv, _, ready := readyRepository(t, g)
	obj := ready.DeepCopy()

	srv.SetDown(true)
	fetches := fetchesOf(sourcev1.GitRepositoryKind)
	testutil.RequestReconcile(g, env.Client, obj, "while-down")
	got := waitFor(g, obj, hasCondition(sourcev1.FetchFailedCondition, metav1.ConditionTrue, sourcev1.GitOperationFailedReason))
	expectFetched(g, sourcev1.GitRepositoryKind, fetches, metrics.ResultFailure)
	g.Expect(conditions.IsFalse(got, meta.ReadyCondition)).To(BeTrue())
	g.Expect(conditions.Reason(got, meta.ReadyCondition)).To(Equal(sourcev1.GitOperationFailedReason))
	g.Expect(conditions.IsTrue(got, meta.ReconcilingCondition)).To(BeTrue(), "it retries")
	g.Expect(conditions.IsTrue(got, sourcev1.ArtifactInStorageCondition)).To(BeTrue())
	g.Expect(got.Status.Artifact).To(Equal(ready.Status.Artifact))
	testutil.Download(g, nil, got.Status.Artifact)

	// Retries with backoff recover by themselves once the host is back.
	srv.SetDown(false)
	waitFor(g, obj, func(o *sourcev1.GitRepository) bool {
		return conditions.IsTrue(o, meta.ReadyCondition) && !conditions.Has(o, sourcev1.FetchFailedCondition)
	})
}

// TestGitRepository_OversizedRepositoryKeepsLastArtifact pushes a commit
// that makes the repository larger than the controller's clone limit: the
// fetch fails with a message naming the limit, and the last artifact stays
// served.
func TestGitRepository_OversizedRepositoryKeepsLastArtifact(t *testing.T) {
	g := NewWithT(t)
	_, repo, ready := readyRepository(t, g)
	obj := ready.DeepCopy()

	noise := make([]byte, 2*maxCloneSize)
	_, err := rand.Read(noise)
	g.Expect(err).NotTo(HaveOccurred())
	repo.MustCommit(t, "main", map[string]string{"big.bin": string(noise)}, "too large")
	testutil.RequestReconcile(g, env.Client, obj, "too-large")
	got := waitFor(g, obj, hasCondition(sourcev1.FetchFailedCondition, metav1.ConditionTrue, sourcev1.GitOperationFailedReason))
	g.Expect(conditions.Message(got, meta.ReadyCondition)).To(ContainSubstring("repository too large"))
	g.Expect(got.Status.Artifact).To(Equal(ready.Status.Artifact), "the last artifact stays")
	testutil.Download(g, nil, got.Status.Artifact)
}

func TestGitRepository_RebuildsMissingOrAlteredArtifact(t *testing.T) {
	g := NewWithT(t)
	_, _, ready := readyRepository(t, g)
	obj := ready.DeepCopy()
	sha := strings.TrimPrefix(ready.Status.Artifact.Revision, "main@sha1:")
	path := storage.LocalPath(*ready.Status.Artifact)

	for i, damage := range []func(){
		func() { g.Expect(os.Remove(path)).To(Succeed()) },
		func() { g.Expect(os.WriteFile(path, []byte("tampered"), 0o600)).To(Succeed()) },
	} {
		damage()
		token := "damage-" + string(rune('a'+i))
		testutil.RequestReconcile(g, env.Client, obj, token)
		got := waitFor(g, obj, func(o *sourcev1.GitRepository) bool {
			return o.Status.LastHandledReconcileAt == token && conditions.IsTrue(o, meta.ReadyCondition)
		})
		g.Expect(got.Status.Artifact.Revision).To(Equal("main@sha1:" + sha))
		g.Expect(storage.Verify(*got.Status.Artifact)).To(Succeed())
		testutil.Download(g, nil, got.Status.Artifact)
	}
}

func TestGitRepository_DeleteRemovesArtifacts(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.CreateNamespace(t)
	srv := gitserver.NewForTest(t)
	base := srv.MustStartHTTP(t)
	srv.MustInitRepo(t, "app.git", "master").MustCommit(t, "master", map[string]string{"a": "1"}, "one")

	obj := newGitRepository(ns, "app", base+"/app.git")
	g.Expect(env.Client.Create(ctx, obj)).To(Succeed())
	got := waitFor(g, obj, readyAt(""))
	g.Expect(got.Status.Artifact.Revision).To(HavePrefix("master@sha1:"), "the default branch is master")
	dir := filepath.Dir(storage.LocalPath(*got.Status.Artifact))
	g.Expect(dir).To(BeADirectory())

	g.Expect(env.Client.Delete(ctx, got)).To(Succeed())
	err := env.Client.Get(ctx, client.ObjectKeyFromObject(obj), &sourcev1.GitRepository{})
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "with no finalizer the source goes at once: %v", err)
	g.Eventually(func() string { return dir }, timeout, interval).ShouldNot(BeADirectory(), "its controller removes its artifacts")
}

func TestGitRepository_Suspended(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.CreateNamespace(t)
	srv := gitserver.NewForTest(t)
	base := srv.MustStartHTTP(t)
	// A name of its own: the objects of other tests may still ask for their
	// repositories at the port this server now has.
	srv.MustInitRepo(t, "suspended.git", "master").MustCommit(t, "master", map[string]string{"a": "1"}, "one")

	obj := newGitRepository(ns, "app", base+"/suspended.git")
	obj.Spec.Suspend = true
	g.Expect(env.Client.Create(ctx, obj)).To(Succeed())
	g.Consistently(func() int64 { return srv.RequestsFor("suspended.git") }, 2*time.Second, interval).Should(BeZero())
	got := &sourcev1.GitRepository{}
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(obj), got)).To(Succeed())
	g.Expect(got.Status.Artifact).To(BeNil())

	g.Expect(env.Client.Patch(ctx, got, client.RawPatch("application/merge-patch+json",
		[]byte(`{"spec":{"suspend":false}}`)))).To(Succeed())
	waitFor(g, obj, readyAt(""))
}

// requestReconcile sets the reconcile request annotation to token.
func requestReconcile(g *WithT, obj client.Object, token string) {
	patch := []byte(`{"metadata":{"annotations":{"` + meta.ReconcileRequestAnnotation + `":"` + token + `"}}}`)
	g.Expect(env.Client.Patch(context.Background(), obj, client.RawPatch("application/merge-patch+json", patch))).To(Succeed())
}

// readyRepository serves a repository with one commit on main, creates a
// GitRepository of it in a new namespace and waits until it is Ready: it
// returns the server, the repository and the Ready object.
func readyRepository(t *testing.T, g *WithT) (*gitserver.Server, *gitserver.Repo, *sourcev1.GitRepository) {
	srv := gitserver.NewForTest(t)
	base := srv.MustStartHTTP(t)
	repo := srv.MustInitRepo(t, "app.git", "main")
	sha := repo.MustCommit(t, "main", map[string]string{"a.yaml": "a: 1\n"}, "one")
	obj := newGitRepository(env.CreateNamespace(t), "app", base+"/app.git")
	obj.Spec.Reference = &sourcev1.GitRepositoryRef{Branch: "main"}
	g.Expect(env.Client.Create(context.Background(), obj)).To(Succeed())
	return srv, repo, waitFor(g, obj, readyAt("main@sha1:"+sha))
}
