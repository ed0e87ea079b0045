package gitserver

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"
)

// Repo is a bare repository under a Server's root. Its methods write
// commits and refs with git plumbing (no working tree), so the repository
// stays a normal bare repository; changes are visible to clients at once.
// The methods of all Repo values for the same repository are serialized.
type Repo struct {
	s    *Server
	name string
	path string
	mu   *sync.Mutex
}

// repoConfig is appended to every new repository's config: pushes over
// HTTP work without authentication, and clients may fetch any reachable
// commit by SHA and use partial clone filters, as on common hosts.
const repoConfig = `[http]
	receivepack = true
[uploadpack]
	allowReachableSHA1InWant = true
	allowFilter = true
`

// InitRepo creates the empty bare repository Root()/name (name like
// "podinfo.git", or "org/podinfo.git" for a nested one) with HEAD pointing
// at branch ("main" if empty), and enables http.receivepack so that pushes
// work. It fails if the folder exists.
func (s *Server) InitRepo(name, branch string) (*Repo, error) {
	rel, err := cleanRelPath(name)
	if err != nil {
		return nil, fmt.Errorf("gitserver: repository name: %w", err)
	}
	if branch == "" {
		branch = "main"
	}
	full := filepath.Join(s.root, filepath.FromSlash(rel))
	if _, err := os.Lstat(full); err == nil {
		return nil, fmt.Errorf("gitserver: repository %q already exists", rel)
	}
	if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
		return nil, fmt.Errorf("gitserver: %w", err)
	}
	if _, err := runGit(s.home, s.root, nil, "init", "--bare", "--quiet", "--template=", "--initial-branch="+branch, full); err != nil {
		_ = os.RemoveAll(full)
		return nil, fmt.Errorf("gitserver: init %s: %w", rel, err)
	}
	f, err := os.OpenFile(filepath.Join(full, "config"), os.O_APPEND|os.O_WRONLY, 0)
	if err == nil {
		_, err = f.WriteString(repoConfig)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		return nil, fmt.Errorf("gitserver: configure %s: %w", rel, err)
	}
	return s.repo(rel, full), nil
}

// Repo returns the existing repository Root()/name, for example one pushed
// by a test or created by an earlier InitRepo.
func (s *Server) Repo(name string) (*Repo, error) {
	rel, err := cleanRelPath(name)
	if err != nil {
		return nil, fmt.Errorf("gitserver: repository name: %w", err)
	}
	full := filepath.Join(s.root, filepath.FromSlash(rel))
	if fi, err := os.Stat(filepath.Join(full, "HEAD")); err != nil || fi.IsDir() {
		return nil, fmt.Errorf("gitserver: %q is not a bare repository", rel)
	}
	return s.repo(rel, full), nil
}

func (s *Server) repo(rel, full string) *Repo {
	s.mu.Lock()
	defer s.mu.Unlock()
	mu := s.repoLocks[full]
	if mu == nil {
		mu = &sync.Mutex{}
		s.repoLocks[full] = mu
	}
	return &Repo{s: s, name: rel, path: full, mu: mu}
}

// Name returns the repository's name relative to the server root, such as
// "podinfo.git"; the repository is served at <baseURL>/<Name()>.
func (r *Repo) Name() string { return r.name }

// Path returns the absolute path of the bare repository.
func (r *Repo) Path() string { return r.path }

// git runs git on the bare repository.
func (r *Repo) git(stdin []byte, args ...string) ([]byte, error) {
	return runGit(r.s.home, r.path, stdin, append([]string{"--git-dir=" + r.path}, args...)...)
}

// Commit writes files (path with '/' separators -> content) on branch and
// commits them with msg, returning the new commit's SHA. Files are created
// or overwritten, with any missing folders; other files are kept. A missing
// branch is created from the tip of the default branch (HEAD), or as a
// root commit in an empty repository.
func (r *Repo) Commit(branch string, files map[string]string, msg string) (sha string, err error) {
	paths := make([]string, 0, len(files))
	for p := range files {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	var ops bytes.Buffer
	for _, p := range paths {
		clean, err := cleanRelPath(p)
		if err != nil {
			return "", fmt.Errorf("gitserver: file path: %w", err)
		}
		fmt.Fprintf(&ops, "M 100644 inline %s\ndata %d\n%s\n", quotePath(clean), len(files[p]), files[p])
	}
	return r.change(branch, msg, nil, ops.Bytes())
}

// Remove deletes paths (files or whole folders) on branch and commits with
// msg, returning the new commit's SHA. Every path must exist on the branch
// (or, for a missing branch, on the default branch it is created from).
func (r *Repo) Remove(branch string, paths []string, msg string) (sha string, err error) {
	if len(paths) == 0 {
		return "", errors.New("gitserver: no paths to remove")
	}
	var ops bytes.Buffer
	cleaned := make([]string, 0, len(paths))
	for _, p := range paths {
		clean, err := cleanRelPath(p)
		if err != nil {
			return "", fmt.Errorf("gitserver: path: %w", err)
		}
		cleaned = append(cleaned, clean)
		fmt.Fprintf(&ops, "D %s\n", quotePath(clean))
	}
	return r.change(branch, msg, cleaned, ops.Bytes())
}

// Symlink commits a symbolic link at linkPath pointing at target (stored
// verbatim, so it may be absolute or climb out of the repository, as
// security tests need) on branch, returning the new commit's SHA.
func (r *Repo) Symlink(branch, linkPath, target, msg string) (sha string, err error) {
	clean, err := cleanRelPath(linkPath)
	if err != nil {
		return "", fmt.Errorf("gitserver: link path: %w", err)
	}
	if target == "" {
		return "", errors.New("gitserver: empty symlink target")
	}
	ops := fmt.Sprintf("M 120000 inline %s\ndata %d\n%s\n", quotePath(clean), len(target), target)
	return r.change(branch, msg, nil, []byte(ops))
}

// change commits ops (git fast-import file commands) on branch on top of
// its tip, or of the default branch's tip if branch is missing. mustExist
// lists paths that must be present in the parent commit.
func (r *Repo) change(branch, msg string, mustExist []string, ops []byte) (string, error) {
	if branch == "" {
		return "", errors.New("gitserver: empty branch name")
	}
	if strings.ContainsAny(branch, "\n\x00") {
		return "", fmt.Errorf("gitserver: invalid branch name %q", branch)
	}
	r.mu.Lock()
	defer r.mu.Unlock()

	parent, err := r.parentOf(branch)
	if err != nil {
		return "", err
	}
	if len(mustExist) > 0 {
		if err := r.checkPaths(parent, mustExist); err != nil {
			return "", err
		}
	}
	if !strings.HasSuffix(msg, "\n") {
		msg += "\n"
	}
	var in bytes.Buffer
	fmt.Fprintf(&in, "feature done\ncommit refs/heads/%s\nmark :1\n", branch)
	fmt.Fprintf(&in, "committer %s <%s> %d +0000\n", AuthorName, AuthorEmail, time.Now().Unix())
	fmt.Fprintf(&in, "data %d\n%s", len(msg), msg)
	if parent != "" {
		fmt.Fprintf(&in, "from %s\n", parent)
	}
	in.Write(ops)
	in.WriteString("\nget-mark :1\ndone\n")
	out, err := r.git(in.Bytes(), "fast-import", "--quiet")
	if err != nil {
		return "", fmt.Errorf("gitserver: commit on %s in %s: %w", branch, r.name, err)
	}
	sha := strings.TrimSpace(string(out))
	if len(sha) < 40 {
		return "", fmt.Errorf("gitserver: commit on %s in %s: unexpected output %q", branch, r.name, out)
	}
	return sha, nil
}

// resolve returns the commit SHA rev points at, or "" if rev does not
// resolve.
func (r *Repo) resolve(rev string) (string, error) {
	out, err := r.git(nil, "rev-parse", "--verify", "--quiet", "--end-of-options", rev+"^{commit}")
	if err != nil {
		if exitCode(err) == 1 {
			return "", nil
		}
		return "", fmt.Errorf("gitserver: resolve %s in %s: %w", rev, r.name, err)
	}
	return strings.TrimSpace(string(out)), nil
}

// parentOf returns the commit a new commit on branch builds on: the
// branch's tip, else the tip of the default branch (HEAD), else "" (an
// empty repository). One git process answers both questions.
func (r *Repo) parentOf(branch string) (string, error) {
	out, err := r.git([]byte("refs/heads/"+branch+"^{commit}\nHEAD^{commit}\n"), "cat-file", "--batch-check=%(objectname)")
	if err != nil {
		return "", fmt.Errorf("gitserver: resolve %s in %s: %w", branch, r.name, err)
	}
	for _, line := range strings.Split(strings.TrimRight(string(out), "\n"), "\n") {
		if line != "" && !strings.HasSuffix(line, " missing") && !strings.Contains(line, " ") {
			return line, nil
		}
	}
	return "", nil
}

// checkPaths fails unless every path exists in commit.
func (r *Repo) checkPaths(commit string, paths []string) error {
	if commit == "" {
		return fmt.Errorf("gitserver: %s: no commit to remove %s from", r.name, strings.Join(paths, ", "))
	}
	var in bytes.Buffer
	for _, p := range paths {
		fmt.Fprintf(&in, "%s:%s\n", commit, p)
	}
	out, err := r.git(in.Bytes(), "cat-file", "--batch-check=%(objectname)")
	if err != nil {
		return fmt.Errorf("gitserver: check paths in %s: %w", r.name, err)
	}
	lines := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
	for i, p := range paths {
		if i >= len(lines) || strings.HasSuffix(lines[i], " missing") {
			return fmt.Errorf("gitserver: %s: path %q does not exist at %s", r.name, p, commit)
		}
	}
	return nil
}

// Tag creates the lightweight tag name pointing at rev (a branch, tag or
// SHA). It fails if the tag exists.
func (r *Repo) Tag(name, rev string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, err := r.git(nil, "tag", "--", name, rev); err != nil {
		return fmt.Errorf("gitserver: tag %s in %s: %w", name, r.name, err)
	}
	return nil
}

// AnnotatedTag creates the annotated tag name pointing at rev (a branch,
// tag or SHA) with message msg. It fails if the tag exists.
func (r *Repo) AnnotatedTag(name, rev, msg string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, err := r.git(nil, "tag", "--annotate", "--message", msg, "--", name, rev); err != nil {
		return fmt.Errorf("gitserver: annotated tag %s in %s: %w", name, r.name, err)
	}
	return nil
}

// Head returns the SHA of the commit at the tip of branch.
func (r *Repo) Head(branch string) (sha string, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	sha, err = r.resolve("refs/heads/" + branch)
	if err != nil {
		return "", err
	}
	if sha == "" {
		return "", fmt.Errorf("gitserver: %s: branch %q does not exist", r.name, branch)
	}
	return sha, nil
}

// Resolve returns the commit SHA that rev (a branch, tag, "HEAD" or SHA)
// points at, peeling annotated tags.
func (r *Repo) Resolve(rev string) (sha string, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	sha, err = r.resolve(rev)
	if err != nil {
		return "", err
	}
	if sha == "" {
		return "", fmt.Errorf("gitserver: %s: %q does not resolve to a commit", r.name, rev)
	}
	return sha, nil
}

// SetBranch points branch at rev, creating it or moving it anywhere (a
// force push: history may be rewritten).
func (r *Repo) SetBranch(branch, rev string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	sha, err := r.resolve(rev)
	if err != nil {
		return err
	}
	if sha == "" {
		return fmt.Errorf("gitserver: %s: %q does not resolve to a commit", r.name, rev)
	}
	if _, err := r.git(nil, "update-ref", "refs/heads/"+branch, sha); err != nil {
		return fmt.Errorf("gitserver: set branch %s in %s: %w", branch, r.name, err)
	}
	return nil
}

// DeleteRef deletes the ref, given in full ("refs/heads/dev",
// "refs/tags/v1.0.0").
func (r *Repo) DeleteRef(ref string) error {
	if !strings.HasPrefix(ref, "refs/") {
		return fmt.Errorf("gitserver: %q is not a full ref name", ref)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, err := r.git(nil, "update-ref", "-d", ref); err != nil {
		return fmt.Errorf("gitserver: delete %s in %s: %w", ref, r.name, err)
	}
	return nil
}

// SetDefaultBranch points HEAD at branch, which need not exist yet.
func (r *Repo) SetDefaultBranch(branch string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, err := r.git(nil, "symbolic-ref", "HEAD", "refs/heads/"+branch); err != nil {
		return fmt.Errorf("gitserver: set HEAD of %s: %w", r.name, err)
	}
	return nil
}

// cleanRelPath checks that p is a relative slash-separated path without
// "." or ".." segments and returns it cleaned.
func cleanRelPath(p string) (string, error) {
	if p == "" {
		return "", errors.New("empty path")
	}
	if strings.HasPrefix(p, "/") || strings.ContainsAny(p, "\\\x00") {
		return "", fmt.Errorf("path %q must be relative, with '/' separators", p)
	}
	for _, seg := range strings.Split(strings.TrimSuffix(p, "/"), "/") {
		if seg == "." || seg == ".." {
			return "", fmt.Errorf("path %q must not contain %q", p, seg)
		}
	}
	return path.Clean(p), nil
}

// quotePath C-quotes a path for git fast-import.
func quotePath(p string) string {
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(p); i++ {
		switch c := p[i]; c {
		case '"', '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case '\n':
			b.WriteString(`\n`)
		case '\t':
			b.WriteString(`\t`)
		default:
			if c < 0x20 || c == 0x7f {
				fmt.Fprintf(&b, `\%03o`, c)
			} else {
				b.WriteByte(c)
			}
		}
	}
	b.WriteByte('"')
	return b.String()
}
