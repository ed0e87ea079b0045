package gitserver

import (
	"net/http"
	"path/filepath"
	"testing"

	"github.com/go-git/go-git/v5"
	. "github.com/onsi/gomega"
)

// TestNativeHTTPServesWhatGitHTTPBackendServes clones, full and shallow,
// with the system's git and with go-git, from the in-process server.
func TestNativeHTTPServesWhatGitHTTPBackendServes(t *testing.T) {
	s := NewForTest(t)
	r, _ := seed(t, s, "org/podinfo.git")
	head, err := r.Commit("main", map[string]string{"deploy/app.yaml": "kind: App2\n"}, "second")
	if err != nil {
		t.Fatal(err)
	}
	base, err := s.StartNativeHTTP()
	if err != nil {
		t.Fatal(err)
	}
	url := base + "/org/podinfo.git"

	t.Run("system git, full clone", func(t *testing.T) {
		g := NewWithT(t)
		dir, err := sysClone(t, s, url, nil)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(sysRevParse(t, s, dir, "HEAD")).To(Equal(head))
		g.Expect(sysRevParse(t, s, dir, "HEAD~1")).NotTo(BeEmpty(), "the history is there")
		g.Expect(readFile(t, filepath.Join(dir, "deploy/app.yaml"))).To(Equal("kind: App2\n"))
	})
	t.Run("system git, shallow clone", func(t *testing.T) {
		g := NewWithT(t)
		dir, err := sysClone(t, s, url, nil, "--depth", "1")
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(sysRevParse(t, s, dir, "HEAD")).To(Equal(head))
		out, err := sysGit(s, dir, nil, "rev-list", "--count", "HEAD")
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(out).To(HavePrefix("1"))
	})
	t.Run("go-git, shallow single-branch clone", func(t *testing.T) {
		g := NewWithT(t)
		repo, dir, err := goGitClone(t, &git.CloneOptions{URL: url, ReferenceName: "refs/heads/main", SingleBranch: true, Depth: 1})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(goGitHead(t, repo, "main")).To(Equal(head))
		g.Expect(readFile(t, filepath.Join(dir, "README.md"))).To(Equal("hello\n"))
	})
	t.Run("missing repository and pushes are refused", func(t *testing.T) {
		g := NewWithT(t)
		_, _, err := goGitClone(t, &git.CloneOptions{URL: base + "/nope.git"})
		g.Expect(err).To(HaveOccurred())
		resp, err := http.Get(url + "/info/refs?service=git-receive-pack")
		g.Expect(err).NotTo(HaveOccurred())
		resp.Body.Close()
		g.Expect(resp.StatusCode).To(Equal(http.StatusForbidden))
	})
}
