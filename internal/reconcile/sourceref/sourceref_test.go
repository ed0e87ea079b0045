package sourceref

import (
	"context"
	"errors"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/windlass-dev/windlass/api/meta"
	sourcev1 "github.com/windlass-dev/windlass/api/source/v1"
	"github.com/windlass-dev/windlass/internal/conditions"
	"github.com/windlass-dev/windlass/internal/reconcile/outcome"
	"github.com/windlass-dev/windlass/internal/scheme"
	"github.com/windlass-dev/windlass/internal/testutil"
)

func TestResolverGet(t *testing.T) {
	repo := func(ns, name string, artifact bool) *sourcev1.GitRepository {
		r := &sourcev1.GitRepository{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
		if artifact {
			r.Status.Artifact = &meta.Artifact{Revision: "main@sha1:1"}
		}
		return r
	}
	fetching, retrying, suspended := repo("a", "fetching", false), repo("a", "retrying", false), repo("a", "suspended", false)
	conditions.MarkTrue(fetching, meta.ReconcilingCondition, meta.ProgressingReason, "cloning")
	conditions.MarkUnknown(fetching, meta.ReadyCondition, meta.ProgressingReason, "cloning")
	conditions.MarkTrue(retrying, meta.ReconcilingCondition, meta.ProgressingWithRetryReason, "retrying after failure")
	conditions.MarkFalse(retrying, meta.ReadyCondition, "GitOperationFailed", "host down")
	suspended.Spec.Suspend = true
	c := fake.NewClientBuilder().WithScheme(scheme.New()).
		WithObjects(repo("a", "app", true), repo("b", "shared", true), repo("a", "new", false), fetching, retrying, suspended).Build()
	tests := []struct {
		name       string
		ref        Ref
		locked     bool
		wantErr    string
		wantReason string
		wantStall  bool
		wantQuiet  bool
	}{
		{name: "same namespace", ref: Ref{Kind: sourcev1.GitRepositoryKind, Name: "app"}},
		{name: "other namespace", ref: Ref{Kind: sourcev1.GitRepositoryKind, Name: "shared", Namespace: "b"}},
		{name: "other namespace, locked", ref: Ref{Kind: sourcev1.GitRepositoryKind, Name: "shared", Namespace: "b"}, locked: true,
			wantErr: "cross-namespace reference to GitRepository 'b/shared' is not allowed", wantReason: meta.AccessDeniedReason, wantStall: true},
		{name: "same namespace named explicitly, locked", ref: Ref{Kind: sourcev1.GitRepositoryKind, Name: "app", Namespace: "a"}, locked: true},
		{name: "a kind not served", ref: Ref{Kind: "HelmChart", Name: "app"},
			wantErr: "source kind 'HelmChart' is not served by Windlass", wantReason: meta.UnsupportedSourceKindReason, wantStall: true},
		{name: "a kind not served, named with the served ones", ref: Ref{Kind: "HelmRepository", Name: "app"},
			wantErr:    "source kind 'HelmRepository' is not served by Windlass (served: Bucket, ExternalArtifact, GitRepository, OCIRepository)",
			wantReason: meta.UnsupportedSourceKindReason, wantStall: true},
		{name: "missing", ref: Ref{Kind: sourcev1.GitRepositoryKind, Name: "gone"},
			wantErr: "source GitRepository 'a/gone' not found", wantReason: meta.ArtifactFailedReason},
		{name: "no artifact yet, never reconciled", ref: Ref{Kind: sourcev1.GitRepositoryKind, Name: "new"},
			wantErr: "has no artifact yet", wantReason: meta.ArtifactFailedReason, wantQuiet: true},
		{name: "no artifact yet, fetching its first", ref: Ref{Kind: sourcev1.GitRepositoryKind, Name: "fetching"},
			wantErr: "has no artifact yet", wantReason: meta.ArtifactFailedReason, wantQuiet: true},
		{name: "no artifact yet, failed", ref: Ref{Kind: sourcev1.GitRepositoryKind, Name: "retrying"},
			wantErr: "has no artifact yet", wantReason: meta.ArtifactFailedReason},
		{name: "no artifact yet, suspended", ref: Ref{Kind: sourcev1.GitRepositoryKind, Name: "suspended"},
			wantErr: "has no artifact yet", wantReason: meta.ArtifactFailedReason},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			r := &Resolver{Client: c, Kinds: Served(), NoCrossNamespaceRefs: tt.locked, Requeue: time.Second}
			source, err := r.Get(context.Background(), "a", tt.ref)
			if tt.wantErr == "" {
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(source.GetName()).To(Equal(tt.ref.Name))
				g.Expect(source.GetArtifact()).NotTo(BeNil())
				return
			}
			g.Expect(err).To(MatchError(ContainSubstring(tt.wantErr)))
			g.Expect(outcome.ReasonOf(err, "")).To(Equal(tt.wantReason))
			var stalling *outcome.Stalling
			g.Expect(errors.As(err, &stalling)).To(Equal(tt.wantStall))
			g.Expect(outcome.QuietWait(err) != nil).To(Equal(tt.wantQuiet), "a quiet wait")
		})
	}
	g := NewWithT(t)
	g.Expect(Key("a", Ref{Kind: "GitRepository", Name: "app"})).To(Equal("GitRepository/a/app"))
	g.Expect(KeyOf("GitRepository", repo("a", "app", false))).To(Equal(Key("x", Ref{Kind: "GitRepository", Name: "app", Namespace: "a"})))
}

func TestKindsCheck(t *testing.T) {
	for _, tc := range []struct {
		kind   string
		served bool
	}{
		{kind: sourcev1.GitRepositoryKind, served: true},
		{kind: sourcev1.OCIRepositoryKind, served: true},
		{kind: sourcev1.BucketKind, served: true},
		{kind: sourcev1.ExternalArtifactKind, served: true},
		{kind: sourcev1.HelmRepositoryKind},
		{kind: ""},
	} {
		t.Run(tc.kind, func(t *testing.T) {
			g := NewWithT(t)
			reason := meta.UnsupportedSourceKindReason
			if tc.served {
				reason = ""
			}
			testutil.ExpectStall(g, Served().Check(tc.kind), reason, "source kind '"+tc.kind+"' is not served by Windlass")
		})
	}
}

// TestResolverGetClearsAForeignPath: an artifact whose path is not in its
// source's own folder of storage is read by its URL only.
func TestResolverGetClearsAForeignPath(t *testing.T) {
	ea := func(name, path string) *sourcev1.ExternalArtifact {
		return &sourcev1.ExternalArtifact{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: name},
			Status: sourcev1.ExternalArtifactStatus{Artifact: &meta.Artifact{Path: path, URL: "http://p/" + path, Digest: "sha256:1"}}}
	}
	c := fake.NewClientBuilder().WithScheme(scheme.New()).WithObjects(
		ea("own", "externalartifact/a/own/1.tar.gz"),
		ea("foreign", "release/a/foreign/1.tar.gz"),
		ea("other", "gitrepository/b/shared/1.tar.gz"),
		ea("climbing", "externalartifact/a/climbing/../../b/x/1.tar.gz"),
		ea("folder", "externalartifact/a/folder/"),
	).Build()
	r := &Resolver{Client: c, Kinds: Served(), Requeue: time.Second}
	for name, want := range map[string]string{
		"own": "externalartifact/a/own/1.tar.gz", "foreign": "", "other": "", "climbing": "", "folder": "",
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			source, err := r.Get(context.Background(), "a", Ref{Kind: sourcev1.ExternalArtifactKind, Name: name})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(source.GetArtifact().Path).To(Equal(want))
			g.Expect(source.GetArtifact().URL).NotTo(BeEmpty(), "the URL stays")
		})
	}
}

// TestResolverWaitsForAnArtifactStoredAgainHere: a source whose artifact
// this process stores again (the replica that stored it went) is waited
// for, keeping the consumer's status, rather than downloaded from the
// replica that went; any other artifact is returned as it is.
func TestResolverWaitsForAnArtifactStoredAgainHere(t *testing.T) {
	repo := func(name string) *sourcev1.GitRepository {
		return &sourcev1.GitRepository{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: name},
			Status: sourcev1.GitRepositoryStatus{Artifact: &meta.Artifact{Revision: "main@sha1:1",
				Path: "gitrepository/a/" + name + "/1.tar.gz", URL: "http://gone:9090/gitrepository/a/" + name + "/1.tar.gz"}}}
	}
	foreign := repo("foreign")
	foreign.Status.Artifact.Path = "gitrepository/b/x/1.tar.gz"
	c := fake.NewClientBuilder().WithScheme(scheme.New()).WithObjects(repo("lost"), repo("here"), foreign).Build()
	var asked []string
	r := &Resolver{Client: c, Kinds: Served(), Requeue: time.Second,
		StoredAgainHere: func(kind string, source client.Object, a meta.Artifact) bool {
			asked = append(asked, kind+"/"+source.GetName()+" "+a.Path)
			return source.GetName() != "here"
		}}
	get := func(name string) (Source, error) {
		return r.Get(context.Background(), "a", Ref{Kind: sourcev1.GitRepositoryKind, Name: name})
	}
	g := NewWithT(t)
	_, err := get("lost")
	g.Expect(err).To(MatchError(ContainSubstring("the artifact of source GitRepository 'a/lost' was stored by another replica and is being stored again here")))
	w := outcome.QuietWait(err)
	g.Expect(w).NotTo(BeNil())
	g.Expect(w.KeepsStatus).To(BeTrue())
	g.Expect(w.RequeueAfter).To(Equal(time.Second))
	g.Expect(asked).To(Equal([]string{"GitRepository/lost gitrepository/a/lost/1.tar.gz"}))

	source, err := get("here")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(source.GetArtifact().URL).To(HavePrefix("http://gone:9090/"))
	source, err = get("foreign")
	g.Expect(err).NotTo(HaveOccurred(), "an artifact outside the source's folder is read by its URL, not asked about")
	g.Expect(source.GetArtifact().Path).To(BeEmpty())
	g.Expect(asked).To(HaveLen(2))
}
