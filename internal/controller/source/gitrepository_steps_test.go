package source

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/windlass-dev/windlass/api/meta"
	sourcev1 "github.com/windlass-dev/windlass/api/source/v1"
	"github.com/windlass-dev/windlass/internal/artifact"
	"github.com/windlass-dev/windlass/internal/conditions"
	"github.com/windlass-dev/windlass/internal/event"
	"github.com/windlass-dev/windlass/internal/git"
	"github.com/windlass-dev/windlass/internal/gitserver"
	"github.com/windlass-dev/windlass/internal/reconcile/outcome"
	"github.com/windlass-dev/windlass/internal/scheme"
)

func TestClassifyGitError(t *testing.T) {
	tests := []struct {
		name       string
		err        error
		wantReason string
		wantStall  bool
	}{
		{"invalid options stall", &git.InvalidOptionsError{Reason: "sparse path '..'"}, sourcev1.InvalidSpecReason, true},
		{"invalid credentials stall", fmt.Errorf("wrapped: %w", &git.InvalidAuthError{Reason: "credentials for another host"}), sourcev1.AuthenticationFailedReason, true},
		{"other errors are retried", errors.New("connection refused"), sourcev1.GitOperationFailedReason, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			err := classifyGitError(tt.err)
			var stalling *outcome.Stalling
			g.Expect(errors.As(err, &stalling)).To(Equal(tt.wantStall))
			g.Expect(outcome.ReasonOf(err, "")).To(Equal(tt.wantReason))
		})
	}
}

func TestValidateGitSpec(t *testing.T) {
	tests := []struct {
		name       string
		spec       sourcev1.GitRepositorySpec
		wantReason string
	}{
		{"valid", sourcev1.GitRepositorySpec{URL: "https://h/r.git"}, ""},
		{"no host", sourcev1.GitRepositorySpec{URL: "https:///r.git"}, sourcev1.URLInvalidReason},
		{"bad scheme", sourcev1.GitRepositorySpec{URL: "file:///r.git"}, sourcev1.URLInvalidReason},
		{"bad semver", sourcev1.GitRepositorySpec{URL: "https://h/r", Reference: &sourcev1.GitRepositoryRef{SemVer: "not a range"}}, sourcev1.InvalidSemverReason},
		{"bad mode", sourcev1.GitRepositorySpec{URL: "https://h/r", Verification: &sourcev1.GitRepositoryVerification{Mode: "Everything"}}, sourcev1.InvalidSpecReason},
		{"provider generic", sourcev1.GitRepositorySpec{URL: "https://h/r", Provider: sourcev1.GitProviderGeneric}, ""},
		{"provider github", sourcev1.GitRepositorySpec{URL: "https://h/r", Provider: sourcev1.GitProviderGitHub}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			obj := &sourcev1.GitRepository{ObjectMeta: metav1.ObjectMeta{Name: "x"}, Spec: tt.spec}
			_, opts, err := validateGitSpec(obj)
			if tt.wantReason == "" {
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(opts.ShallowClone).To(BeTrue())
				return
			}
			var stalling *outcome.Stalling
			g.Expect(errors.As(err, &stalling)).To(BeTrue())
			g.Expect(stalling.Reason).To(Equal(tt.wantReason))
		})
	}
}

func TestGitContentConfigChanged(t *testing.T) {
	ignore := "x/"
	a := &sourcev1.GitRepository{}
	a.Status.IncludedArtifacts = nil
	tests := []struct {
		name   string
		mutate func(o *sourcev1.GitRepository)
		want   bool
	}{
		{"nothing changed", func(*sourcev1.GitRepository) {}, false},
		{"ignore", func(o *sourcev1.GitRepository) { o.Spec.Ignore = &ignore }, true},
		{"submodules", func(o *sourcev1.GitRepository) { o.Spec.RecurseSubmodules = true }, true},
		{"sparse", func(o *sourcev1.GitRepository) { o.Spec.SparseCheckout = []string{"a"} }, true},
		{"verification", func(o *sourcev1.GitRepository) {
			o.Spec.Verification = &sourcev1.GitRepositoryVerification{Mode: "head"}
		}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			obj := a.DeepCopy()
			tt.mutate(obj)
			g.Expect(gitContentConfigChanged(obj, nil)).To(Equal(tt.want))
		})
	}
}

// TestReconcileSourceRefusesPlainHTTP: with --insecure-allow-http=false an
// http:// URL stalls before any request, without echoing its userinfo.
func TestReconcileSourceRefusesPlainHTTP(t *testing.T) {
	g := NewWithT(t)
	srv := gitserver.NewForTest(t)
	base := srv.MustStartHTTP(t)
	srv.MustInitRepo(t, "app.git", "main").MustCommit(t, "main", map[string]string{"a": "1"}, "one")
	obj := newGitRepository("default", "app", strings.Replace(base, "http://", "http://git:s3cret@", 1)+"/app.git")
	obj.Spec.Reference = &sourcev1.GitRepositoryRef{Branch: "main"}
	r := &GitRepositoryReconciler{Client: fake.NewClientBuilder().WithScheme(scheme.New()).Build()}
	sc := &gitScope{}
	defer sc.cleanup()
	_, err := r.reconcileSource(context.Background(), obj, sc)
	var stalling *outcome.Stalling
	g.Expect(errors.As(err, &stalling)).To(BeTrue(), "%v", err)
	g.Expect(stalling.Reason).To(Equal(meta.InsecureConnectionsDisallowedReason))
	g.Expect(err.Error()).NotTo(ContainSubstring("s3cret"))
	g.Expect(srv.Requests()).To(BeZero())

	r.AllowInsecureHTTP = true
	_, err = r.reconcileSource(context.Background(), obj, sc)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(srv.Requests()).NotTo(BeZero())
}

// TestReconcileSourceRefusesAPlainHTTPProxy: with --insecure-allow-http=false
// an https repository behind an http:// proxy stalls before any request,
// without echoing the proxy's credentials.
func TestReconcileSourceRefusesAPlainHTTPProxy(t *testing.T) {
	g := NewWithT(t)
	proxy := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "proxy"},
		Data: map[string][]byte{"address": []byte("http://proxy.example:3128"), "username": []byte("u"), "password": []byte("pr0xy-s3cret")}}
	obj := newGitRepository("default", "app", "https://example.com/app.git")
	obj.Spec.ProxySecretRef = &meta.LocalObjectReference{Name: "proxy"}
	r := &GitRepositoryReconciler{Client: fake.NewClientBuilder().WithScheme(scheme.New()).WithObjects(proxy).Build()}
	sc := &gitScope{}
	defer sc.cleanup()
	_, err := r.reconcileSource(context.Background(), obj, sc)
	g.Expect(outcome.ReasonOf(err, "")).To(Equal(meta.InsecureConnectionsDisallowedReason))
	g.Expect(err).To(MatchError(ContainSubstring("proxy of secret 'proxy' is plain HTTP")))
	g.Expect(err.Error()).NotTo(ContainSubstring("pr0xy-s3cret"))
}

// TestReconcileStorage runs the storage step on an object whose artifact
// is absent, stored, gone from disk or altered on disk.
func TestReconcileStorage(t *testing.T) {
	tests := []struct {
		name          string
		damage        func(g *WithT, path string)
		noArtifact    bool
		elsewhere     bool
		wantArtifact  bool
		wantInStorage metav1.ConditionStatus
		wantProgress  string
		wantWarning   bool
	}{
		{name: "no artifact yet", noArtifact: true, wantProgress: "building artifact"},
		{name: "stored", wantArtifact: true, wantInStorage: metav1.ConditionTrue},
		{name: "stored here at another address", elsewhere: true, wantArtifact: true, wantInStorage: metav1.ConditionTrue},
		{name: "gone from disk", damage: func(g *WithT, path string) { g.Expect(os.Remove(path)).To(Succeed()) },
			wantInStorage: metav1.ConditionFalse, wantProgress: "building artifact: disappeared from storage", wantWarning: true},
		{name: "stored by another replica", elsewhere: true, damage: func(g *WithT, path string) { g.Expect(os.Remove(path)).To(Succeed()) },
			wantInStorage: metav1.ConditionFalse, wantProgress: "building artifact: was stored at another address"},
		{name: "altered on disk", damage: func(g *WithT, path string) { g.Expect(os.WriteFile(path, []byte("x"), 0o600)).To(Succeed()) },
			wantInStorage: metav1.ConditionFalse, wantProgress: "building artifact: does not match its digest", wantWarning: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			store, err := artifact.New(t.TempDir(), "storage.example:9090", time.Minute, 2)
			g.Expect(err).NotTo(HaveOccurred())
			obj := newGitRepository("default", "app", "https://example.com/app.git")
			src := t.TempDir()
			if !tt.noArtifact {
				g.Expect(os.WriteFile(filepath.Join(src, "a.yaml"), []byte("a: 1\n"), 0o600)).To(Succeed())
				a := store.NewArtifactFor(sourcev1.GitRepositoryKind, obj, "main@sha1:1", "1.tar.gz")
				g.Expect(store.Archive(&a, src, nil)).To(Succeed())
				if tt.elsewhere {
					a.URL = "http://old-address/" + a.Path
				}
				obj.Status.Artifact = &a
				if tt.damage != nil {
					tt.damage(g, store.LocalPath(a))
				}
			}
			recorder := events.NewFakeRecorder(10)
			r := &GitRepositoryReconciler{Storage: store, Events: &event.Recorder{Kubernetes: recorder}}
			sc := &gitScope{}
			res, err := r.reconcileStorage(context.Background(), obj, sc)
			warnings := 0
			if tt.wantWarning {
				warnings = 1
			}
			g.Expect(recorder.Events).To(HaveLen(warnings), "a warning only for an artifact lost or altered here")
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(res).To(Equal(outcome.ResultSuccess))
			g.Expect(obj.Status.Artifact != nil).To(Equal(tt.wantArtifact))
			if tt.wantArtifact {
				g.Expect(obj.Status.Artifact.URL).To(HavePrefix("http://storage.example:9090/"), "the advertised address is refreshed")
			}
			if tt.wantInStorage == "" {
				g.Expect(conditions.Has(obj, sourcev1.ArtifactInStorageCondition)).To(BeFalse())
			} else {
				g.Expect(conditions.Get(obj, sourcev1.ArtifactInStorageCondition).Status).To(Equal(tt.wantInStorage))
			}
			if tt.wantProgress == "" {
				g.Expect(conditions.Has(obj, meta.ReconcilingCondition)).To(BeFalse())
			} else {
				g.Expect(conditions.Message(obj, meta.ReconcilingCondition)).To(Equal(tt.wantProgress))
			}
			if tt.damage == nil {
				g.Expect(sc.forgotten).To(BeNil())
				return
			}
			// Built again, the same content is no change (no NewArtifact
			// event after a failover); other content is.
			rebuild := func() artifactChange {
				a := store.NewArtifactFor(sourcev1.GitRepositoryKind, obj, "main@sha1:1", "1.tar.gz")
				g.Expect(store.Archive(&a, src, nil)).To(Succeed())
				return r.store().stored(context.Background(), obj, sc.storageCheck, a, func(a *meta.Artifact) { obj.Status.Artifact = a })
			}
			g.Expect(rebuild()).To(Equal(artifactUnchanged), "the forgotten artifact's content, built again")
			obj.Status.Artifact = nil
			g.Expect(os.WriteFile(filepath.Join(src, "a.yaml"), []byte("a: 2\n"), 0o600)).To(Succeed())
			g.Expect(rebuild()).To(Equal(artifactReplaced), "other content: a forgotten artifact was no first one")
		})
	}
}
