package source

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
	"golang.org/x/crypto/ssh"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/windlass-dev/windlass/api/meta"
	sourcev1 "github.com/windlass-dev/windlass/api/source/v1"
	"github.com/windlass-dev/windlass/internal/conditions"
	"github.com/windlass-dev/windlass/internal/gitserver"
	"github.com/windlass-dev/windlass/internal/metrics"
	"github.com/windlass-dev/windlass/internal/testutil"
)

func TestGitRepository_ContentRules(t *testing.T) {
	ctx := context.Background()
	ns := env.CreateNamespace(t)
	srv := gitserver.NewForTest(t)
	base := srv.MustStartHTTP(t)
	repo := srv.MustInitRepo(t, "app.git", "main")
	repo.MustCommit(t, "main", map[string]string{
		"deploy/app.yaml":      "app: 1\n",
		"deploy/skip.txt":      "skip\n",
		"docs/readme.md":       "docs\n",
		"deploy/.sourceignore": "*.txt\n",
	}, "files")
	g := NewWithT(t)
	_, err := repo.Symlink("main", "deploy/escape.yaml", "/etc/passwd", "escape")
	g.Expect(err).NotTo(HaveOccurred())
	_, err = repo.Symlink("main", "deploy/up.yaml", "../../../../../../etc/hostname", "escape up")
	g.Expect(err).NotTo(HaveOccurred())
	sha, err := repo.Symlink("main", "deploy/alias.yaml", "app.yaml", "alias")
	g.Expect(err).NotTo(HaveOccurred())
	ignore := "docs/\n"

	tests := []struct {
		name   string
		mutate func(*sourcev1.GitRepository)
		want   []string
		absent []string
	}{
		{
			name:   "symlinks stay inside the checkout",
			want:   []string{"deploy/app.yaml", "deploy/alias.yaml", "docs/readme.md"},
			absent: []string{"deploy/escape.yaml", "deploy/up.yaml", "deploy/skip.txt"},
		},
		{
			name:   "sparse checkout",
			mutate: func(o *sourcev1.GitRepository) { o.Spec.SparseCheckout = []string{"deploy"} },
			want:   []string{"deploy/app.yaml"},
			absent: []string{"docs/readme.md"},
		},
		{
			name:   "spec ignore",
			mutate: func(o *sourcev1.GitRepository) { o.Spec.Ignore = &ignore },
			want:   []string{"deploy/app.yaml"},
			absent: []string{"docs/readme.md", "deploy/skip.txt"},
		},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			obj := newGitRepository(ns, "content-"+string(rune('a'+i)), base+"/app.git")
			obj.Spec.Reference = &sourcev1.GitRepositoryRef{Branch: "main"}
			if tt.mutate != nil {
				tt.mutate(obj)
			}
			g.Expect(env.Client.Create(ctx, obj)).To(Succeed())
			got := waitFor(g, obj, readyAt("main@sha1:"+sha))
			dir := testutil.Extract(t, g, testutil.Download(g, nil, got.Status.Artifact))
			for _, p := range tt.want {
				g.Expect(filepath.Join(dir, p)).To(BeARegularFile())
			}
			for _, p := range tt.absent {
				g.Expect(filepath.Join(dir, p)).NotTo(BeAnExistingFile())
			}
			if alias := filepath.Join(dir, "deploy/alias.yaml"); tt.mutate == nil {
				g.Expect(os.ReadFile(alias)).To(Equal([]byte("app: 1\n")))
			}
		})
	}
}

func TestGitRepository_Include(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.CreateNamespace(t)
	srv := gitserver.NewForTest(t)
	base := srv.MustStartHTTP(t)
	srv.MustInitRepo(t, "app.git", "main").MustCommit(t, "main", map[string]string{"app.yaml": "app\n"}, "app")
	lib := srv.MustInitRepo(t, "lib.git", "main")
	lib.MustCommit(t, "main", map[string]string{"deploy/lib.yaml": "v1\n", "other/x": "x"}, "lib")

	app := newGitRepository(ns, "app", base+"/app.git")
	app.Spec.Reference = &sourcev1.GitRepositoryRef{Branch: "main"}
	app.Spec.Include = []sourcev1.GitRepositoryInclude{{
		GitRepositoryRef: meta.LocalObjectReference{Name: "lib"}, FromPath: "deploy", ToPath: "vendor/lib",
	}}
	g.Expect(env.Client.Create(ctx, app)).To(Succeed())
	waitFor(g, app, hasCondition(sourcev1.IncludeUnavailableCondition, metav1.ConditionTrue, sourcev1.IncludeUnavailableReason))

	libObj := newGitRepository(ns, "lib", base+"/lib.git")
	libObj.Spec.Reference = &sourcev1.GitRepositoryRef{Branch: "main"}
	g.Expect(env.Client.Create(ctx, libObj)).To(Succeed())
	got := waitFor(g, app, readyAt(""))
	g.Expect(conditions.Has(got, sourcev1.IncludeUnavailableCondition)).To(BeFalse())
	dir := testutil.Extract(t, g, testutil.Download(g, nil, got.Status.Artifact))
	g.Expect(os.ReadFile(filepath.Join(dir, "vendor/lib/lib.yaml"))).To(Equal([]byte("v1\n")))
	g.Expect(filepath.Join(dir, "vendor/lib/other")).NotTo(BeAnExistingFile())

	// A new artifact of the included repository rebuilds the includer at
	// once, through the watch.
	lib.MustCommit(t, "main", map[string]string{"deploy/lib.yaml": "v2\n"}, "lib v2")
	testutil.RequestReconcile(g, env.Client, libObj, "lib-v2")
	got = waitFor(g, app, func(o *sourcev1.GitRepository) bool {
		if o.Status.Artifact == nil || len(o.Status.IncludedArtifacts) != 1 {
			return false
		}
		l := &sourcev1.GitRepository{}
		_ = env.Client.Get(ctx, client.ObjectKeyFromObject(libObj), l)
		return l.Status.Artifact != nil && o.Status.IncludedArtifacts[0].Digest == l.Status.Artifact.Digest &&
			l.Status.LastHandledReconcileAt == "lib-v2"
	})
	dir = testutil.Extract(t, g, testutil.Download(g, nil, got.Status.Artifact))
	g.Expect(os.ReadFile(filepath.Join(dir, "vendor/lib/lib.yaml"))).To(Equal([]byte("v2\n")))

	// The included artifact stored again here (a replica's that this one
	// took over, deferred until the includer asked) runs the includer at
	// once, not at its requeue: its status does not change.
	runs := metrics.Runs(sourcev1.GitRepositoryKind, client.ObjectKeyFromObject(app))
	storage.StoredAgain(sourcev1.GitRepositoryKind, libObj)
	g.Eventually(func() uint64 { return metrics.Runs(sourcev1.GitRepositoryKind, client.ObjectKeyFromObject(app)) }, timeout, interval).
		Should(BeNumerically(">", runs))
}

func TestGitRepository_VerifiesSSHSignedCommits(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.CreateNamespace(t)
	srv := gitserver.NewForTest(t)
	base := srv.MustStartHTTP(t)
	srv.MustInitRepo(t, "app.git", "main").MustCommit(t, "main", map[string]string{"a.yaml": "a\n"}, "unsigned")

	signer, keyPEM, err := gitserver.GenerateSSHKey()
	g.Expect(err).NotTo(HaveOccurred())
	trusted := map[string][]byte{"release.sshpub": ssh.MarshalAuthorizedKey(signer.PublicKey())}
	obj := newGitRepository(ns, "app", base+"/app.git")
	obj.Spec.Reference = &sourcev1.GitRepositoryRef{Branch: "main"}
	obj.Spec.Verification = &sourcev1.GitRepositoryVerification{
		Mode: sourcev1.ModeGitHEAD, SecretRef: *createSecret(g, ns, "keys", trusted),
	}
	g.Expect(env.Client.Create(ctx, obj)).To(Succeed())
	got := waitFor(g, obj, hasCondition(sourcev1.SourceVerifiedCondition, metav1.ConditionFalse, sourcev1.VerificationErrorReason))
	g.Expect(got.Status.Artifact).To(BeNil(), "an unverified commit never becomes an artifact")
	g.Expect(conditions.IsFalse(got, meta.ReadyCondition)).To(BeTrue())

	sha := pushSSHSignedCommit(t, g, srv, base+"/app.git", keyPEM)
	testutil.RequestReconcile(g, env.Client, obj, "signed")
	got = waitFor(g, obj, readyAt("main@sha1:"+sha))
	g.Expect(conditions.IsTrue(got, sourcev1.SourceVerifiedCondition)).To(BeTrue())
	g.Expect(conditions.Message(got, sourcev1.SourceVerifiedCondition)).To(ContainSubstring("SHA256:"))
	g.Expect(*got.Status.SourceVerificationMode).To(Equal(sourcev1.ModeGitHEAD))
}

// pushSSHSignedCommit clones url, commits a change signed with the SSH key
// in keyPEM using the system git, pushes it and returns its hash.
func pushSSHSignedCommit(t *testing.T, g *WithT, srv *gitserver.Server, url string, keyPEM []byte) string {
	dir := t.TempDir()
	keyFile := filepath.Join(t.TempDir(), "id_ed25519")
	g.Expect(os.WriteFile(keyFile, keyPEM, 0o600)).To(Succeed())
	run := func(args ...string) string {
		cmd := srv.GitCommand(dir, args...)
		out, err := cmd.CombinedOutput()
		g.Expect(err).NotTo(HaveOccurred(), string(out))
		return string(out)
	}
	run("clone", url, ".")
	g.Expect(os.WriteFile(filepath.Join(dir, "a.yaml"), []byte("a: signed\n"), 0o600)).To(Succeed())
	run("add", "a.yaml")
	run("-c", "gpg.format=ssh", "-c", "user.signingkey="+keyFile, "commit", "-S", "-m", "signed")
	run("push", "origin", "HEAD:main")
	out, err := exec.Command("git", "-C", dir, "rev-parse", "HEAD").Output()
	g.Expect(err).NotTo(HaveOccurred())
	return string(out[:40])
}
