package gitserver

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	. "github.com/onsi/gomega"
)

// sysGit runs the system git as a client in dir and returns its combined
// output and error.
func sysGit(s *Server, dir string, env []string, args ...string) (string, error) {
	cmd := s.GitCommand(dir, args...)
	cmd.Env = append(cmd.Env, env...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// sysClone clones url with the system git and returns the clone's folder.
func sysClone(t *testing.T, s *Server, url string, env []string, extra ...string) (string, error) {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "clone")
	args := append([]string{"clone", "--quiet"}, extra...)
	args = append(args, url, dst)
	out, err := sysGit(s, t.TempDir(), env, args...)
	if err != nil {
		t.Logf("git clone %s: %s", url, out)
	}
	return dst, err
}

// sysRevParse returns the SHA rev points at in the clone at dir.
func sysRevParse(t *testing.T, s *Server, dir, rev string) string {
	t.Helper()
	out, err := sysGit(s, dir, nil, "rev-parse", rev)
	NewWithT(t).Expect(err).NotTo(HaveOccurred(), out)
	return strings.TrimSpace(out)
}

// goGitClone clones with go-git into a temp folder.
func goGitClone(t *testing.T, opts *git.CloneOptions) (*git.Repository, string, error) {
	t.Helper()
	dst := t.TempDir()
	repo, err := git.PlainClone(dst, false, opts)
	return repo, dst, err
}

// goGitHead returns the SHA of refs/heads/<branch> in a go-git repository.
func goGitHead(t *testing.T, repo *git.Repository, branch string) string {
	t.Helper()
	ref, err := repo.Reference(plumbing.NewBranchReferenceName(branch), true)
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	return ref.Hash().String()
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	return string(b)
}

// seed creates name with one commit on main and returns the repo and SHA.
func seed(t *testing.T, s *Server, name string) (*Repo, string) {
	t.Helper()
	r := s.MustInitRepo(t, name, "main")
	sha := r.MustCommit(t, "main", map[string]string{"README.md": "hello\n", "deploy/app.yaml": "kind: App\n"}, "initial")
	return r, sha
}
