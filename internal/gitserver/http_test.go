package gitserver

import (
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/go-git/go-git/v5"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	. "github.com/onsi/gomega"
)

func TestHTTPCloneWithSystemGit(t *testing.T) {
	g := NewWithT(t)
	s := NewForTest(t)
	_, sha := seed(t, s, "podinfo.git")
	base := s.MustStartHTTP(t)
	g.Expect(base).To(MatchRegexp(`^http://127\.0\.0\.1:\d+$`))

	again, err := s.StartHTTP()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(again).To(Equal(base))
	g.Expect(s.HTTPURL()).To(Equal(base))

	dir, err := sysClone(t, s, base+"/podinfo.git", nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(sysRevParse(t, s, dir, "HEAD")).To(Equal(sha))
	g.Expect(readFile(t, filepath.Join(dir, "deploy/app.yaml"))).To(Equal("kind: App\n"))
}

func TestHTTPCloneWithGoGit(t *testing.T) {
	g := NewWithT(t)
	s := NewForTest(t)
	r, _ := seed(t, s, "org/podinfo.git")
	dev, err := r.Commit("dev", map[string]string{"dev.txt": "dev"}, "dev work")
	g.Expect(err).NotTo(HaveOccurred())
	base := s.MustStartHTTP(t)

	repo, dir, err := goGitClone(t, &git.CloneOptions{URL: base + "/org/podinfo.git", ReferenceName: "refs/heads/dev", SingleBranch: true})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(goGitHead(t, repo, "dev")).To(Equal(dev))
	g.Expect(readFile(t, filepath.Join(dir, "dev.txt"))).To(Equal("dev"))
	g.Expect(readFile(t, filepath.Join(dir, "README.md"))).To(Equal("hello\n"))
}

func TestHTTPMissingRepository(t *testing.T) {
	g := NewWithT(t)
	s := NewForTest(t)
	base := s.MustStartHTTP(t)
	_, _, err := goGitClone(t, &git.CloneOptions{URL: base + "/nope.git"})
	g.Expect(err).To(HaveOccurred())
	_, err = sysClone(t, s, base+"/nope.git", nil)
	g.Expect(err).To(HaveOccurred())
}

func TestHTTPPush(t *testing.T) {
	g := NewWithT(t)
	s := NewForTest(t)
	r, _ := seed(t, s, "podinfo.git")
	base := s.MustStartHTTP(t)
	dir, err := sysClone(t, s, base+"/podinfo.git", nil)
	g.Expect(err).NotTo(HaveOccurred())

	// More than http.postBuffer (1 MiB), so git sends the pack chunked.
	big := make([]byte, 3<<20)
	_, _ = rand.Read(big)
	g.Expect(os.WriteFile(filepath.Join(dir, "pushed.txt"), []byte("pushed\n"), 0o644)).To(Succeed())
	g.Expect(os.WriteFile(filepath.Join(dir, "big.txt"), []byte(hex.EncodeToString(big)), 0o644)).To(Succeed())
	out, err := sysGit(s, dir, nil, "add", "-A")
	g.Expect(err).NotTo(HaveOccurred(), out)
	out, err = sysGit(s, dir, nil, "commit", "--quiet", "-m", "from client")
	g.Expect(err).NotTo(HaveOccurred(), out)
	out, err = sysGit(s, dir, nil, "push", "--quiet", "origin", "main", "main:refs/heads/feature")
	g.Expect(err).NotTo(HaveOccurred(), out)

	pushed := sysRevParse(t, s, dir, "HEAD")
	g.Expect(r.Head("main")).To(Equal(pushed))
	g.Expect(r.Head("feature")).To(Equal(pushed))

	// The server-side helpers build on top of pushed commits.
	next, err := r.Commit("main", map[string]string{"after.txt": "x"}, "after push")
	g.Expect(err).NotTo(HaveOccurred())
	out, err = sysGit(s, dir, nil, "pull", "--quiet", "--ff-only")
	g.Expect(err).NotTo(HaveOccurred(), out)
	g.Expect(sysRevParse(t, s, dir, "HEAD")).To(Equal(next))
	g.Expect(readFile(t, filepath.Join(dir, "pushed.txt"))).To(Equal("pushed\n"))
}

func TestHTTPBasicAuth(t *testing.T) {
	g := NewWithT(t)
	s := NewForTest(t)
	_, sha := seed(t, s, "podinfo.git")
	base := s.MustStartHTTP(t)
	s.SetBasicAuth("alice", "s3cret")
	url := base + "/podinfo.git"

	resp, err := http.Get(url + "/info/refs?service=git-upload-pack")
	g.Expect(err).NotTo(HaveOccurred())
	resp.Body.Close()
	g.Expect(resp.StatusCode).To(Equal(http.StatusUnauthorized))
	g.Expect(resp.Header.Values("WWW-Authenticate")).To(ContainElement(ContainSubstring("Basic")))

	_, _, err = goGitClone(t, &git.CloneOptions{URL: url})
	g.Expect(err).To(HaveOccurred())
	_, _, err = goGitClone(t, &git.CloneOptions{URL: url, Auth: &githttp.BasicAuth{Username: "alice", Password: "wrong"}})
	g.Expect(err).To(HaveOccurred())
	repo, _, err := goGitClone(t, &git.CloneOptions{URL: url, Auth: &githttp.BasicAuth{Username: "alice", Password: "s3cret"}})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(goGitHead(t, repo, "main")).To(Equal(sha))

	_, err = sysClone(t, s, "http://alice:wrong@"+base[len("http://"):]+"/podinfo.git", nil)
	g.Expect(err).To(HaveOccurred())
	dir, err := sysClone(t, s, "http://alice:s3cret@"+base[len("http://"):]+"/podinfo.git", nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(sysRevParse(t, s, dir, "HEAD")).To(Equal(sha))

	// Turning auth off opens the server again.
	s.SetBasicAuth("", "")
	_, _, err = goGitClone(t, &git.CloneOptions{URL: url})
	g.Expect(err).NotTo(HaveOccurred())
}

func TestHTTPBearerToken(t *testing.T) {
	g := NewWithT(t)
	s := NewForTest(t)
	_, sha := seed(t, s, "podinfo.git")
	base := s.MustStartHTTP(t)
	s.SetBearerToken("tok-123")
	url := base + "/podinfo.git"

	_, _, err := goGitClone(t, &git.CloneOptions{URL: url})
	g.Expect(err).To(HaveOccurred())
	_, _, err = goGitClone(t, &git.CloneOptions{URL: url, Auth: &githttp.TokenAuth{Token: "wrong"}})
	g.Expect(err).To(HaveOccurred())
	repo, _, err := goGitClone(t, &git.CloneOptions{URL: url, Auth: &githttp.TokenAuth{Token: "tok-123"}})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(goGitHead(t, repo, "main")).To(Equal(sha))

	_, err = sysClone(t, s, url, nil, "-c", "http.extraHeader=Authorization: Bearer nope")
	g.Expect(err).To(HaveOccurred())
	dir, err := sysClone(t, s, url, nil, "-c", "http.extraHeader=Authorization: Bearer tok-123")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(sysRevParse(t, s, dir, "HEAD")).To(Equal(sha))

	// With both configured, either credential works.
	s.SetBasicAuth("bob", "pw")
	_, _, err = goGitClone(t, &git.CloneOptions{URL: url, Auth: &githttp.BasicAuth{Username: "bob", Password: "pw"}})
	g.Expect(err).NotTo(HaveOccurred())
	_, _, err = goGitClone(t, &git.CloneOptions{URL: url, Auth: &githttp.TokenAuth{Token: "tok-123"}})
	g.Expect(err).NotTo(HaveOccurred())
}

func TestSetDownAndRequests(t *testing.T) {
	g := NewWithT(t)
	s := NewForTest(t)
	_, sha := seed(t, s, "podinfo.git")
	base := s.MustStartHTTP(t)
	url := base + "/podinfo.git"
	g.Expect(s.Requests()).To(BeZero())

	_, _, err := goGitClone(t, &git.CloneOptions{URL: url})
	g.Expect(err).NotTo(HaveOccurred())
	afterClone := s.Requests()
	g.Expect(afterClone).To(BeNumerically(">=", 2)) // ref advertisement + upload-pack
	g.Expect(s.RequestsFor("podinfo.git")).To(Equal(afterClone), "every request named the repository")
	g.Expect(s.RequestsFor("podinfo")).To(BeZero(), "a name is matched whole")

	s.SetDown(true)
	resp, err := http.Get(url + "/info/refs?service=git-upload-pack")
	g.Expect(err).NotTo(HaveOccurred())
	resp.Body.Close()
	g.Expect(resp.StatusCode).To(Equal(http.StatusServiceUnavailable))
	_, _, err = goGitClone(t, &git.CloneOptions{URL: url})
	g.Expect(err).To(HaveOccurred())
	_, err = sysClone(t, s, url, nil)
	g.Expect(err).To(HaveOccurred())
	g.Expect(s.Requests()).To(BeNumerically(">", afterClone), "refused requests are counted too")

	s.SetDown(false)
	repo, _, err := goGitClone(t, &git.CloneOptions{URL: url})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(goGitHead(t, repo, "main")).To(Equal(sha))
	g.Expect(s.HTTPURL()).To(Equal(base), "same port after the outage")

	// Nothing is counted while no client talks to the server.
	before := s.Requests()
	_, err = s.InitRepo("other.git", "main")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(s.Requests()).To(Equal(before))
}

func TestStopClosesListeners(t *testing.T) {
	g := NewWithT(t)
	s, err := New(t.TempDir())
	g.Expect(err).NotTo(HaveOccurred())
	seed(t, s, "podinfo.git")
	httpURL, err := s.StartHTTP()
	g.Expect(err).NotTo(HaveOccurred())
	_, err = s.StartSSH()
	g.Expect(err).NotTo(HaveOccurred())
	_, _, err = goGitClone(t, &git.CloneOptions{URL: httpURL + "/podinfo.git"})
	g.Expect(err).NotTo(HaveOccurred())

	s.Stop()
	s.Stop() // idempotent
	_, _, err = goGitClone(t, &git.CloneOptions{URL: httpURL + "/podinfo.git"})
	g.Expect(err).To(HaveOccurred())
	_, err = s.StartHTTP()
	g.Expect(err).To(HaveOccurred())
	// Repositories stay on disk.
	g.Expect(filepath.Join(s.Root(), "podinfo.git", "HEAD")).To(BeAnExistingFile())
}
