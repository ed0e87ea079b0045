package git

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// localRepo is a non-bare repository on disk, driven with the system git in
// a hermetic environment and cloned over file://.
type localRepo struct {
	t       testing.TB
	dir     string
	home    string
	started bool // has a commit
}

// newLocalRepo creates a repository whose first commit is on branch.
func newLocalRepo(t testing.TB, branch string) *localRepo {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Fatalf("the tests need the git command: %v", err)
	}
	r := &localRepo{t: t, dir: t.TempDir(), home: t.TempDir()}
	r.git("init", "-q", "-b", branch)
	return r
}

// env is a hermetic git environment with fixed identities and dates.
func (r *localRepo) env() []string {
	return []string{
		"HOME=" + r.home,
		"PATH=" + os.Getenv("PATH"),
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=Test Author",
		"GIT_AUTHOR_EMAIL=author@example.com",
		"GIT_AUTHOR_DATE=2024-01-02T03:04:05Z",
		"GIT_COMMITTER_NAME=Test Committer",
		"GIT_COMMITTER_EMAIL=committer@example.com",
		"GIT_COMMITTER_DATE=2024-01-02T03:04:05Z",
	}
}

// git runs git in the repository and returns its trimmed output.
func (r *localRepo) git(args ...string) string {
	r.t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = r.dir
	cmd.Env = r.env()
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		r.t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return strings.TrimSpace(out.String())
}

// gitStdin runs git with stdin and returns its trimmed output.
func (r *localRepo) gitStdin(stdin string, args ...string) string {
	r.t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = r.dir
	cmd.Env = r.env()
	cmd.Stdin = strings.NewReader(stdin)
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		r.t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return strings.TrimSpace(out.String())
}

// url returns the file:// URL of the repository.
func (r *localRepo) url() string {
	return "file://" + r.dir
}

// commit writes files on branch (creating the branch from the current HEAD
// when missing) and commits them.
func (r *localRepo) commit(branch string, files map[string]string, msg string) string {
	r.t.Helper()
	r.switchTo(branch)
	for name, content := range files {
		p := filepath.Join(r.dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			r.t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			r.t.Fatal(err)
		}
	}
	r.git("add", "-A")
	r.git("commit", "-q", "--allow-empty", "-m", msg)
	return r.git("rev-parse", "HEAD")
}

// switchTo checks out branch, creating it from HEAD when missing. The first
// commit goes on the branch the repository was created with.
func (r *localRepo) switchTo(branch string) {
	r.t.Helper()
	if !r.started {
		r.started = true
		return
	}
	if r.git("branch", "--list", branch) == "" {
		r.git("checkout", "-q", "-b", branch)
		return
	}
	r.git("checkout", "-q", branch)
}

// tag creates a lightweight tag.
func (r *localRepo) tag(name, rev string) {
	r.t.Helper()
	r.git("tag", name, rev)
}

// annotatedTag creates an annotated tag and returns the tag object's hash.
func (r *localRepo) annotatedTag(name, rev, msg string) string {
	r.t.Helper()
	r.git("tag", "-a", "-m", msg, name, rev)
	return r.git("rev-parse", "refs/tags/"+name)
}

// listFiles returns the files under dir, slash-separated, without .git
// directories and the .git files of submodules.
func listFiles(t testing.TB, dir string) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Name() == ".git" && d.IsDir() {
			return filepath.SkipDir
		}
		if d.IsDir() || d.Name() == ".git" {
			return nil
		}
		rel, _ := filepath.Rel(dir, p)
		files = append(files, filepath.ToSlash(rel))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(files)
	return files
}

// newTestClient returns a Client on a fresh work directory.
func newTestClient(t testing.TB, auth *AuthOptions, proxy *ProxyOptions) (*Client, string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "work")
	c, err := NewClient(dir, auth, proxy)
	if err != nil {
		t.Fatalf("NewClient: %v", err)
	}
	t.Cleanup(c.Close)
	return c, dir
}
