package gitserver

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	. "github.com/onsi/gomega"
)

func TestRepoCommitRemoveSymlink(t *testing.T) {
	g := NewWithT(t)
	s := NewForTest(t)
	r := s.MustInitRepo(t, "podinfo.git", "main")
	g.Expect(r.Name()).To(Equal("podinfo.git"))
	g.Expect(r.Path()).To(Equal(filepath.Join(s.Root(), "podinfo.git")))
	g.Expect(filepath.Join(r.Path(), "HEAD")).To(BeAnExistingFile())
	_, err := r.Head("main")
	g.Expect(err).To(HaveOccurred(), "empty repository has no branch yet")

	first, err := r.Commit("main", map[string]string{
		"README.md":            "one\n",
		"deploy/base/app.yaml": "a: 1\n",
		"with space/it's.txt":  "quoted\n",
		"empty.txt":            "",
	}, "first")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(first).To(MatchRegexp(`^[0-9a-f]{40}$`))
	g.Expect(r.Head("main")).To(Equal(first))

	second, err := r.Commit("main", map[string]string{"README.md": "two\n"}, "second")
	g.Expect(err).NotTo(HaveOccurred())
	third, err := r.Remove("main", []string{"deploy"}, "drop deploy")
	g.Expect(err).NotTo(HaveOccurred())
	fourth, err := r.Symlink("main", "evil", "../../../etc/passwd", "symlink")
	g.Expect(err).NotTo(HaveOccurred())

	_, err = r.Remove("main", []string{"no/such/file"}, "nothing")
	g.Expect(err).To(MatchError(ContainSubstring("does not exist")))
	g.Expect(r.Head("main")).To(Equal(fourth), "a failed change commits nothing")

	base := s.MustStartHTTP(t)
	dir, err := sysClone(t, s, base+"/podinfo.git", nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(readFile(t, filepath.Join(dir, "README.md"))).To(Equal("two\n"))
	g.Expect(readFile(t, filepath.Join(dir, "with space/it's.txt"))).To(Equal("quoted\n"))
	g.Expect(readFile(t, filepath.Join(dir, "empty.txt"))).To(BeEmpty())
	g.Expect(filepath.Join(dir, "deploy")).NotTo(BeAnExistingFile())
	target, err := os.Readlink(filepath.Join(dir, "evil"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(target).To(Equal("../../../etc/passwd"))

	out, err := sysGit(s, dir, nil, "log", "--format=%H %an <%ae> %s")
	g.Expect(err).NotTo(HaveOccurred(), out)
	g.Expect(strings.Split(strings.TrimSpace(out), "\n")).To(Equal([]string{
		fourth + " Windlass Test <test@windlass.invalid> symlink",
		third + " Windlass Test <test@windlass.invalid> drop deploy",
		second + " Windlass Test <test@windlass.invalid> second",
		first + " Windlass Test <test@windlass.invalid> first",
	}))
	out, err = sysGit(s, dir, nil, "ls-files", "-s", "evil")
	g.Expect(err).NotTo(HaveOccurred(), out)
	g.Expect(out).To(HavePrefix("120000 "))

	// The bare repository passes git's own consistency check.
	out, err = sysGit(s, r.Path(), nil, "fsck", "--strict")
	g.Expect(err).NotTo(HaveOccurred(), out)
}

func TestRepoBranchesAndTags(t *testing.T) {
	g := NewWithT(t)
	s := NewForTest(t)
	r, mainSHA := seed(t, s, "podinfo.git")

	// A new branch starts at the default branch's tip.
	dev, err := r.Commit("feature/x", map[string]string{"dev.txt": "dev"}, "dev")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(r.Resolve(dev + "~1")).To(Equal(mainSHA))
	g.Expect(r.Head("main")).To(Equal(mainSHA))

	g.Expect(r.Tag("v1.0.0", "main")).To(Succeed())
	g.Expect(r.AnnotatedTag("v1.1.0", dev, "release 1.1.0")).To(Succeed())
	g.Expect(r.Tag("v1.0.0", dev)).NotTo(Succeed(), "tags are not moved")
	g.Expect(r.Tag("bad", "no-such-rev")).NotTo(Succeed())
	g.Expect(r.Resolve("v1.0.0")).To(Equal(mainSHA))
	g.Expect(r.Resolve("v1.1.0")).To(Equal(dev))

	base := s.MustStartHTTP(t)
	repo, _, err := goGitClone(t, &git.CloneOptions{URL: base + "/podinfo.git"})
	g.Expect(err).NotTo(HaveOccurred())
	light, err := repo.Reference(plumbing.NewTagReferenceName("v1.0.0"), true)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(light.Hash().String()).To(Equal(mainSHA))
	annRef, err := repo.Reference(plumbing.NewTagReferenceName("v1.1.0"), true)
	g.Expect(err).NotTo(HaveOccurred())
	tag, err := repo.TagObject(annRef.Hash())
	g.Expect(err).NotTo(HaveOccurred(), "v1.1.0 is an annotated tag object")
	g.Expect(tag.Message).To(Equal("release 1.1.0\n"))
	g.Expect(tag.Target.String()).To(Equal(dev))
	g.Expect(tag.Tagger.Email).To(Equal(AuthorEmail))

	// Force-move and delete branches; change the default branch.
	g.Expect(r.SetBranch("main", dev)).To(Succeed())
	g.Expect(r.Head("main")).To(Equal(dev))
	g.Expect(r.SetBranch("main", mainSHA)).To(Succeed(), "history may be rewritten")
	g.Expect(r.Head("main")).To(Equal(mainSHA))
	g.Expect(r.DeleteRef("refs/heads/feature/x")).To(Succeed())
	_, err = r.Head("feature/x")
	g.Expect(err).To(HaveOccurred())
	g.Expect(r.SetDefaultBranch("release")).To(Succeed())
	rel, err := r.Commit("release", map[string]string{"r.txt": "r"}, "release")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(r.Resolve("HEAD")).To(Equal(rel))
	_, err = r.Resolve(rel + "~1")
	g.Expect(err).To(HaveOccurred(), "HEAD pointed at a missing branch, so this is a root commit")
}

func TestRepoRootCommitOnOtherBranch(t *testing.T) {
	g := NewWithT(t)
	s := NewForTest(t)
	r := s.MustInitRepo(t, "empty.git", "")
	out, err := sysGit(s, r.Path(), nil, "symbolic-ref", "HEAD")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(strings.TrimSpace(out)).To(Equal("refs/heads/main"))

	sha, err := r.Commit("gh-pages", map[string]string{"index.html": "<p>"}, "pages")
	g.Expect(err).NotTo(HaveOccurred())
	_, err = r.Resolve(sha + "~1")
	g.Expect(err).To(HaveOccurred(), "root commit")
}

func TestRepoValidation(t *testing.T) {
	g := NewWithT(t)
	s := NewForTest(t)
	r, _ := seed(t, s, "podinfo.git")

	_, err := s.InitRepo("podinfo.git", "main")
	g.Expect(err).To(MatchError(ContainSubstring("already exists")))
	for _, bad := range []string{"", "/abs.git", "../up.git", "a/./b.git", `win\path.git`} {
		_, err := s.InitRepo(bad, "main")
		g.Expect(err).To(HaveOccurred(), "name %q", bad)
	}
	for _, bad := range []string{"/etc/passwd", "../x", "a/../../x", ""} {
		_, err := r.Commit("main", map[string]string{bad: "x"}, "bad")
		g.Expect(err).To(HaveOccurred(), "path %q", bad)
	}
	_, err = r.Commit("bad..branch", map[string]string{"a": "b"}, "bad branch")
	g.Expect(err).To(HaveOccurred())
	_, err = r.Commit("", map[string]string{"a": "b"}, "no branch")
	g.Expect(err).To(HaveOccurred())

	again, err := s.Repo("podinfo.git")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(again.Path()).To(Equal(r.Path()))
	_, err = s.Repo("missing.git")
	g.Expect(err).To(HaveOccurred())
}

func TestRepoConcurrentCommits(t *testing.T) {
	g := NewWithT(t)
	s := NewForTest(t)
	r, _ := seed(t, s, "podinfo.git")
	other, err := s.Repo("podinfo.git")
	g.Expect(err).NotTo(HaveOccurred())

	var wg sync.WaitGroup
	errs := make(chan error, 20)
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			repo := r
			if i%2 == 1 {
				repo = other
			}
			_, err := repo.Commit("main", map[string]string{filepath.Join("files", string(rune('a'+i))): "x"}, "concurrent")
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		g.Expect(err).NotTo(HaveOccurred())
	}
	out, err := sysGit(s, r.Path(), nil, "ls-tree", "--name-only", "main", "files/")
	g.Expect(err).NotTo(HaveOccurred(), out)
	g.Expect(strings.Fields(out)).To(HaveLen(20))
}

func TestManyReposAreFast(t *testing.T) {
	g := NewWithT(t)
	s := NewForTest(t)
	for i := range 30 {
		r := s.MustInitRepo(t, filepath.Join("many", string(rune('a'+i))+".git"), "main")
		r.MustCommit(t, "main", map[string]string{"f": "x"}, "c")
	}
	entries, err := os.ReadDir(filepath.Join(s.Root(), "many"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(entries).To(HaveLen(30))
}

func BenchmarkInitRepoAndCommit(b *testing.B) {
	s := NewForTest(b)
	for i := 0; b.Loop(); i++ {
		r, err := s.InitRepo(filepath.Join("bench", strconv.Itoa(i)+".git"), "main")
		if err != nil {
			b.Fatal(err)
		}
		if _, err := r.Commit("main", map[string]string{"a/b.yaml": "x"}, "c"); err != nil {
			b.Fatal(err)
		}
	}
}
