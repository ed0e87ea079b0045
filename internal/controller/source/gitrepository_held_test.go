package source

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/client-go/tools/events"

	"github.com/windlass-dev/windlass/api/meta"
	sourcev1 "github.com/windlass-dev/windlass/api/source/v1"
	"github.com/windlass-dev/windlass/internal/conditions"
	"github.com/windlass-dev/windlass/internal/event"
	"github.com/windlass-dev/windlass/internal/reconcile/outcome"
	"github.com/windlass-dev/windlass/internal/testutil"
)

func TestParseRevision(t *testing.T) {
	hash := strings.Repeat("ab", 20)
	tests := []struct {
		revision, ref, hash, err string
	}{
		{revision: "main@sha1:" + hash, ref: "main", hash: hash},
		{revision: "v1.2.0@sha1:" + strings.ToUpper(hash), ref: "v1.2.0", hash: hash},
		{revision: "refs/pull/1/head@sha1:" + hash, ref: "refs/pull/1/head", hash: hash},
		{revision: "a@b@sha1:" + hash, ref: "a@b", hash: hash},
		{revision: "sha1:" + hash, hash: hash},
		{revision: "@sha1:" + hash, err: "has an empty reference"},
		{revision: "main@sha256:" + hash, err: "does not end in sha1:<40 hex digits>"},
		{revision: "main@sha1:abc", err: "does not end in sha1:<40 hex digits>"},
		{revision: "main@sha1:" + strings.Repeat("zz", 20), err: "does not end in sha1:<40 hex digits>"},
		{revision: "", err: "does not end in sha1:<40 hex digits>"},
	}
	for _, tt := range tests {
		t.Run(tt.revision, func(t *testing.T) {
			g := NewWithT(t)
			ref, hash, err := parseRevision(tt.revision)
			if tt.err != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tt.err)))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(ref).To(Equal(tt.ref))
			g.Expect(hash).To(Equal(tt.hash))
		})
	}
}

// TestHeldSpec: a rebuild pins the commit, narrows the fetch to the branch
// the spec selects when the revision was seen there, and builds with what
// status recorded rather than a spec changed while held.
func TestHeldSpec(t *testing.T) {
	hash := strings.Repeat("0f", 20)
	tests := []struct {
		name       string
		ref        *sourcev1.GitRepositoryRef
		revRef     string
		wantBranch string
	}{
		{name: "default branch", revRef: "master", wantBranch: "master"},
		{name: "branch", ref: &sourcev1.GitRepositoryRef{Branch: "main"}, revRef: "main", wantBranch: "main"},
		{name: "branch and commit", ref: &sourcev1.GitRepositoryRef{Branch: "main", Commit: hash}, revRef: "main", wantBranch: "main"},
		{name: "branch changed while held", ref: &sourcev1.GitRepositoryRef{Branch: "dev"}, revRef: "main"},
		{name: "tag", ref: &sourcev1.GitRepositoryRef{Tag: "main"}, revRef: "main"},
		{name: "semver", ref: &sourcev1.GitRepositoryRef{SemVer: "^1"}, revRef: "v1.0.0"},
		{name: "reference name", ref: &sourcev1.GitRepositoryRef{Name: "refs/heads/main"}, revRef: "main"},
		{name: "bare commit", ref: &sourcev1.GitRepositoryRef{Commit: hash}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			obj := newGitRepository("apps", "app", "https://example.com/app.git")
			obj.Spec.Reference = tt.ref
			obj.Spec.Ignore = ptrTo("new/")
			obj.Spec.SparseCheckout = []string{"new"}
			obj.Spec.Include = []sourcev1.GitRepositoryInclude{{GitRepositoryRef: meta.LocalObjectReference{Name: "new"}}}
			obj.Status.ObservedIgnore = ptrTo("old/")
			obj.Status.ObservedRecurseSubmodules = true
			obj.Status.ObservedSparseCheckout = []string{"old"}
			obj.Status.ObservedInclude = []sourcev1.GitRepositoryInclude{{GitRepositoryRef: meta.LocalObjectReference{Name: "old"}}}

			spec := heldSpec(obj, tt.revRef, hash)
			g.Expect(spec.Reference).To(Equal(&sourcev1.GitRepositoryRef{Commit: hash, Branch: tt.wantBranch}))
			g.Expect(spec.Ignore).To(Equal(ptrTo("old/")))
			g.Expect(spec.RecurseSubmodules).To(BeTrue())
			g.Expect(spec.SparseCheckout).To(Equal([]string{"old"}))
			g.Expect(spec.Include).To(Equal(obj.Status.ObservedInclude))
			g.Expect(obj.Spec.Reference).To(Equal(tt.ref), "the object's spec is left alone")
			g.Expect(spec.URL).To(Equal(obj.Spec.URL))
		})
	}
}

func ptrTo[T any](v T) *T { return &v }

// TestRebuildHeldArtifact_UnparsableRevision: an artifact lost from storage
// whose revision names no commit cannot be rebuilt; the step stalls and
// says why, and keeps the artifact in status.
func TestRebuildHeldArtifact_UnparsableRevision(t *testing.T) {
	g := NewWithT(t)
	recorder := events.NewFakeRecorder(10)
	r := &GitRepositoryReconciler{Events: &event.Recorder{Kubernetes: recorder}, Storage: storage}
	obj := newGitRepository("held", "app", "https://example.com/app.git")
	a := storage.NewArtifactFor(sourcev1.GitRepositoryKind, obj, "main@sha1:nothex", "gone.tar.gz")
	a.Digest = "sha256:" + strings.Repeat("0", 64)
	obj.Status.Artifact = &a

	rebuilt, err := r.rebuildHeldArtifact(context.Background(), obj)
	g.Expect(rebuilt).To(BeFalse())
	var stalling *outcome.Stalling
	g.Expect(errors.As(err, &stalling)).To(BeTrue(), "%v", err)
	g.Expect(err.Error()).To(Equal("cannot rebuild the artifact at the held revision: " +
		"revision 'main@sha1:nothex' does not end in sha1:<40 hex digits>"))
	g.Expect(obj.Status.Artifact).To(Equal(&a))
	g.Expect(conditions.IsFalse(obj, sourcev1.ArtifactInStorageCondition)).To(BeTrue())
	g.Expect(conditions.IsTrue(obj, sourcev1.StorageOperationFailedCondition)).To(BeTrue())
	g.Expect(recorder.Events).To(HaveLen(1))
	g.Expect(<-recorder.Events).To(Equal("Warning StorageOperationFailed artifact for revision 'main@sha1:nothex' disappeared from storage"))
}

// TestGitRepository_ClosedGateRebuildsLostArtifact: behind a closed gate,
// an artifact deleted from storage or altered is rebuilt at the held
// commit, not at the new one: same revision, same digest, downloadable,
// still Blocked, with an ArtifactRebuilt event. A rebuild that fails is
// retried. Once the artifact is back, a reconcile fetches nothing. Opening
// the gate fetches the new commit.
func TestGitRepository_ClosedGateRebuildsLostArtifact(t *testing.T) {
	g := NewWithT(t)
	ns := env.CreateNamespace(t)
	srv, repo, obj, sha1 := gatedRepository(t, g, ns)
	ready := waitFor(g, obj, readyAt("main@sha1:"+sha1))
	held := ready.Status.Artifact

	blocked := "Fetching new revisions is blocked, gate '" + ns + "/freeze' is closed."
	setGate(g, ns, "freeze", false)
	waitFor(g, obj, blockedBy(blocked))
	sha2 := repo.MustCommit(t, "main", map[string]string{"a.yaml": "a: 2\n"}, "two")
	path := storage.LocalPath(*held)

	for _, damage := range []struct {
		token, why string
		do         func()
	}{
		{"deleted", "disappeared from storage", func() { g.Expect(os.Remove(path)).To(Succeed()) }},
		{"tampered", "does not match its digest", func() { g.Expect(os.WriteFile(path, []byte("tampered"), 0o600)).To(Succeed()) }},
	} {
		damage.do()
		requests := srv.Requests()
		testutil.RequestReconcile(g, env.Client, obj, damage.token)
		got := waitFor(g, obj, func(o *sourcev1.GitRepository) bool {
			return o.Status.LastHandledReconcileAt == damage.token && conditions.IsTrue(o, meta.ReadyCondition)
		})
		g.Expect(srv.Requests()).To(BeNumerically(">", requests), "%s: the held commit is fetched", damage.token)
		g.Expect(got.Status.Artifact.Revision).To(Equal(held.Revision), damage.token)
		g.Expect(got.Status.Artifact.Path).To(Equal(held.Path), damage.token)
		g.Expect(got.Status.Artifact.Digest).To(Equal(held.Digest), "%s: the same artifact, rebuilt", damage.token)
		g.Expect(storage.Verify(*got.Status.Artifact)).To(Succeed())
		dir := testutil.Extract(t, g, testutil.Download(g, nil, got.Status.Artifact))
		g.Expect(os.ReadFile(dir+"/a.yaml")).To(Equal([]byte("a: 1\n")), "%s: not the new commit", damage.token)
		g.Expect(conditions.IsTrue(got, meta.BlockedCondition)).To(BeTrue())
		g.Expect(conditions.Message(got, meta.BlockedCondition)).To(Equal(blocked))
		g.Expect(conditions.IsTrue(got, sourcev1.ArtifactInStorageCondition)).To(BeTrue())
		g.Expect(conditions.Message(got, meta.ReadyCondition)).To(Equal("stored artifact for revision '" + held.Revision + "'"))
		g.Eventually(func() []string { return testutil.EventMessages(g, env.Client, obj, sourcev1.GitRepositoryKind) }, timeout, interval).
			Should(ContainElement("ArtifactRebuilt: artifact " + damage.why + ": rebuilt at the held revision '" + held.Revision + "'"))
	}

	// A rebuild that fails says so in Ready and is retried; its success
	// makes the object Ready again, still held.
	srv.SetDown(true)
	g.Expect(os.Remove(path)).To(Succeed())
	testutil.RequestReconcile(g, env.Client, obj, "down")
	got := waitFor(g, obj, func(o *sourcev1.GitRepository) bool {
		return o.Status.LastHandledReconcileAt == "down" && conditions.IsTrue(o, sourcev1.FetchFailedCondition)
	})
	g.Expect(conditions.IsFalse(got, meta.ReadyCondition)).To(BeTrue())
	g.Expect(conditions.IsFalse(got, sourcev1.ArtifactInStorageCondition)).To(BeTrue())
	g.Expect(conditions.IsTrue(got, meta.BlockedCondition)).To(BeTrue())
	g.Expect(got.Status.Artifact.Revision).To(Equal(held.Revision), "the held revision stays recorded")
	srv.SetDown(false)
	got = waitFor(g, obj, readyAt(held.Revision))
	g.Expect(got.Status.Artifact.Digest).To(Equal(held.Digest))
	g.Expect(conditions.Has(got, sourcev1.FetchFailedCondition)).To(BeFalse())
	g.Expect(conditions.IsTrue(got, meta.BlockedCondition)).To(BeTrue())
	testutil.Download(g, nil, got.Status.Artifact)

	requests := srv.Requests()
	testutil.RequestReconcile(g, env.Client, obj, "present")
	got = waitFor(g, obj, func(o *sourcev1.GitRepository) bool { return o.Status.LastHandledReconcileAt == "present" })
	g.Expect(srv.Requests()).To(Equal(requests), "an artifact in storage costs no fetch")
	g.Expect(got.Status.Artifact.Revision).To(Equal(held.Revision))

	setGate(g, ns, "freeze", true)
	got = waitFor(g, obj, readyAt("main@sha1:"+sha2))
	g.Expect(conditions.Has(got, meta.BlockedCondition)).To(BeFalse())
	dir := testutil.Extract(t, g, testutil.Download(g, nil, got.Status.Artifact))
	g.Expect(os.ReadFile(dir + "/a.yaml")).To(Equal([]byte("a: 2\n")))
}
