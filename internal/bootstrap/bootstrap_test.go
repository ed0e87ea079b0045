package bootstrap

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing/transport/http"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/yaml"

	kustomizev1 "github.com/windlass-dev/windlass/api/kustomize/v1"
	sourcev1 "github.com/windlass-dev/windlass/api/source/v1"
	"github.com/windlass-dev/windlass/internal/git"
	"github.com/windlass-dev/windlass/internal/gitserver"
)

// TestPush: the first push starts the branch of an empty repository, the
// same files again commit nothing, a change commits only that change.
func TestPush(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	srv := gitserver.NewForTest(t)
	srv.SetBasicAuth("bot", "s3cret")
	base := srv.MustStartHTTP(t)
	repo := srv.MustInitRepo(t, "fleet.git", "main")
	url := base + "/fleet.git"
	auth := &http.BasicAuth{Username: "bot", Password: "s3cret"}
	sync := Sync{URL: url, Branch: "main", Path: "clusters/dev", Namespace: "flux-system", Interval: 10 * time.Minute, SecretRef: SyncName}
	files, err := Files(sync, []byte("# components v1\n"))
	g.Expect(err).NotTo(HaveOccurred())
	commit := Commit{AuthorName: "windlass", AuthorEmail: "windlass@localhost", Message: "Add Windlass"}

	first, changed, err := Push(ctx, url, "main", auth, files, commit)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(changed).To(BeTrue())
	head, err := repo.Head("main")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(head).To(Equal(first))
	show := func(name string) string {
		out, err := srv.GitCommand(repo.Path(), "show", "main:"+name).Output()
		g.Expect(err).NotTo(HaveOccurred(), name)
		return string(out)
	}
	g.Expect(show("clusters/dev/flux-system/gotk-components.yaml")).To(Equal("# components v1\n"))
	g.Expect(show("clusters/dev/flux-system/kustomization.yaml")).To(ContainSubstring("- gotk-sync.yaml"))
	docs := strings.Split(show("clusters/dev/flux-system/gotk-sync.yaml"), "---\n")
	g.Expect(docs).To(HaveLen(3))
	var gitRepo sourcev1.GitRepository
	g.Expect(yaml.UnmarshalStrict([]byte(docs[1]), &gitRepo)).To(Succeed())
	g.Expect(gitRepo.Spec.URL).To(Equal(url))
	g.Expect(gitRepo.Spec.SecretRef.Name).To(Equal(SyncName))
	var ks kustomizev1.Kustomization
	g.Expect(yaml.UnmarshalStrict([]byte(docs[2]), &ks)).To(Succeed())
	g.Expect(ks.Spec.Path).To(Equal("./clusters/dev"))
	g.Expect(ks.Spec.Prune).To(BeTrue())
	g.Expect(docs[1] + docs[2]).NotTo(ContainSubstring("status"))

	again, changed, err := Push(ctx, url, "main", auth, files, commit)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(changed).To(BeFalse(), "the same files commit nothing")
	g.Expect(again).To(Equal(first))

	files, err = Files(sync, []byte("# components v2\n"))
	g.Expect(err).NotTo(HaveOccurred())
	upgraded, changed, err := Push(ctx, url, "main", auth, files, commit)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(changed).To(BeTrue())
	g.Expect(upgraded).NotTo(Equal(first))
	g.Expect(show("clusters/dev/flux-system/gotk-components.yaml")).To(Equal("# components v2\n"))
	out, err := srv.GitCommand(repo.Path(), "diff", "--name-only", first, upgraded).Output()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(strings.TrimSpace(string(out))).To(Equal("clusters/dev/flux-system/gotk-components.yaml"))

	_, _, err = Push(ctx, url, "main", &http.BasicAuth{Username: "bot", Password: "wrong"}, files, commit)
	g.Expect(err).To(HaveOccurred())
	g.Expect(err.Error()).NotTo(ContainSubstring("wrong"))
}

// TestPushOverSSH: the keys of a GitRepository's SSH Secret (identity and
// known_hosts) give the credentials to push with; a host key that is not in
// known_hosts is refused.
func TestPushOverSSH(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	srv := gitserver.NewForTest(t)
	_, identity := srv.AuthorizedSSHKeyForTest(t)
	base := srv.MustStartSSH(t)
	repo := srv.MustInitRepo(t, "fleet.git", "main")
	url := base + "/fleet.git"
	files := map[string][]byte{"clusters/dev/flux-system/gotk-components.yaml": []byte("# components\n")}
	commit := Commit{AuthorName: "windlass", AuthorEmail: "windlass@localhost", Message: "Add Windlass"}

	auth, err := git.Credentials(url, map[string][]byte{git.SecretKeyIdentity: identity, git.SecretKeyKnownHosts: srv.KnownHosts()})
	g.Expect(err).NotTo(HaveOccurred())
	sha, changed, err := Push(ctx, url, "main", auth, files, commit)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(changed).To(BeTrue())
	head, err := repo.Head("main")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(head).To(Equal(sha))

	other := gitserver.NewForTest(t)
	other.MustStartSSH(t)
	auth, err = git.Credentials(url, map[string][]byte{git.SecretKeyIdentity: identity, git.SecretKeyKnownHosts: other.KnownHosts()})
	g.Expect(err).NotTo(HaveOccurred())
	_, _, err = Push(ctx, url, "main", auth, map[string][]byte{"x.yaml": []byte("x: 1\n")}, commit)
	g.Expect(err).To(HaveOccurred(), "a host key that is not in known_hosts")
	again, err := repo.Head("main")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(again).To(Equal(sha), "nothing pushed")
}
