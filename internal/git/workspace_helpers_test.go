package git

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// automationAuthor is the author of the commits the workspace tests make.
var automationAuthor = Signature{Name: "Image Automation", Email: "automation@example.com"}

// commitTime is the date of the commits the workspace tests make.
var commitTime = time.Date(2024, 5, 6, 7, 8, 9, 0, time.UTC)

// pushRemote is a repository on a loopback git server, reached over one
// protected transport with the credentials that open it.
type pushRemote struct {
	*served
	url  string
	data map[string][]byte
	auth *AuthOptions
}

// newPushRemote serves repo.git (one commit on main holding
// deploy/app.yaml) over transport: http (basic auth), https or ssh.
func newPushRemote(t *testing.T, transport string) *pushRemote {
	t.Helper()
	s := newServed(t)
	base, data := startTransport(t, s, transport)
	url := base + "/repo.git"
	return &pushRemote{served: s, url: url, data: data, auth: authFor(t, url, data)}
}

// open opens a Workspace on the repository, failing the test on error.
func (p *pushRemote) open(t *testing.T, opts CheckoutOptions) (*Workspace, *Commit) {
	t.Helper()
	c, _ := newTestClient(t, p.auth, nil)
	w, commit, err := c.Open(context.Background(), p.url, opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return w, commit
}

// git runs the system git in the bare repository with the extra
// environment and returns its trimmed output, failing the test on error.
func (p *pushRemote) git(t *testing.T, env []string, args ...string) string {
	t.Helper()
	out, err := p.tryGit(env, args...)
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// gitStdin is git with stdin.
func (p *pushRemote) gitStdin(t *testing.T, stdin string, args ...string) string {
	t.Helper()
	out, err := p.runGit(nil, stdin, args...)
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// tryGit is git that returns the error.
func (p *pushRemote) tryGit(env []string, args ...string) (string, error) {
	return p.runGit(env, "", args...)
}

// runGit runs git in the bare repository and returns its trimmed combined
// output.
func (p *pushRemote) runGit(env []string, stdin string, args ...string) (string, error) {
	cmd := p.srv.GitCommand(p.repo.Path(), args...)
	cmd.Env = append(cmd.Env, env...)
	cmd.Stdin = strings.NewReader(stdin)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return strings.TrimSpace(out.String()), err
}

// remoteRef returns what ref points at on the remote, or "" when it does
// not exist.
func (p *pushRemote) remoteRef(t *testing.T, ref string) string {
	t.Helper()
	out, err := p.tryGit(nil, "rev-parse", "--verify", "--quiet", ref)
	if err != nil {
		return ""
	}
	return out
}

// editFiles writes files (slash-separated path -> content) into dir; a
// content of "" removes the file.
func editFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if content == "" {
			if err := os.Remove(p); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// editAndCommit edits the workspace's files and commits them with msg,
// failing the test on error.
func editAndCommit(t *testing.T, w *Workspace, files map[string]string, msg string) string {
	t.Helper()
	editFiles(t, w.Dir(), files)
	hash, err := w.Commit(CommitOptions{Message: msg, Author: automationAuthor, When: commitTime})
	if err != nil {
		t.Fatalf("Commit: %v", err)
	}
	return hash
}

// readWorkFile returns the content of a file of the work tree, or "" when
// it does not exist.
func readWorkFile(t *testing.T, w *Workspace, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(w.Dir(), filepath.FromSlash(name)))
	if os.IsNotExist(err) {
		return ""
	}
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
