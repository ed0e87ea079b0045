package build

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// ErrOutsideRoot is wrapped by every error about a path that leaves the root
// directory, directly or through a symbolic link.
var ErrOutsideRoot = errors.New("path is outside the root directory")

// errReadOnly is returned by every method of ConfinedFS that would write.
var errReadOnly = errors.New("the build filesystem is read-only")

// maxSymlinks bounds the symbolic links followed while resolving one path,
// so that link loops end with an error.
const maxSymlinks = 255

// ConfinedFS is a read-only filesys.FileSystem that serves only the files
// inside one root directory. It resolves symbolic links itself and refuses
// any path, or link target, that leaves root. It can also serve a few
// in-memory files at absolute paths of its choosing (the generated overlay).
//
// Relative paths are taken relative to root. The zero value is not usable;
// call NewConfinedFS.
type ConfinedFS struct {
	root    string
	virtual map[string][]byte
}

// readHook, when set by tests, sees every real path whose content is read.
var readHook func(path string)

var _ filesys.FileSystem = (*ConfinedFS)(nil)

// NewConfinedFS returns a ConfinedFS rooted at root, which must be an
// existing directory. root itself may be reached through symbolic links; they
// are resolved once here and trusted.
func NewConfinedFS(root string) (*ConfinedFS, error) {
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, fmt.Errorf("root %q: %w", root, err)
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return nil, fmt.Errorf("root %q: %w", root, err)
	}
	fi, err := os.Stat(real)
	if err != nil {
		return nil, fmt.Errorf("root %q: %w", root, err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("root %q is not a directory", root)
	}
	return &ConfinedFS{root: real, virtual: map[string][]byte{}}, nil
}

// Root returns the absolute, symlink-free root directory.
func (c *ConfinedFS) Root() string { return c.root }

// addVirtualFile serves data at the absolute path name: in a directory of
// its own outside root, or in place of a file inside root, whose path must
// then be free of symbolic links.
func (c *ConfinedFS) addVirtualFile(name string, data []byte) {
	c.virtual[filepath.Clean(name)] = data
}

// isVirtualDir reports whether some in-memory file lives directly in dir.
func (c *ConfinedFS) isVirtualDir(dir string) bool {
	for name := range c.virtual {
		if filepath.Dir(name) == dir {
			return true
		}
	}
	return false
}

// isVirtual reports whether p is an in-memory file or directory.
func (c *ConfinedFS) isVirtual(p string) bool {
	_, ok := c.virtual[p]
	return ok || c.isVirtualDir(p)
}

// abs makes p absolute (relative to root) and clean.
func (c *ConfinedFS) abs(p string) string {
	if !filepath.IsAbs(p) {
		p = filepath.Join(c.root, p)
	}
	return filepath.Clean(p)
}

// within reports whether p is root or below it. Both must be clean.
func within(root, p string) bool {
	if root == string(filepath.Separator) {
		return true
	}
	return p == root || strings.HasPrefix(p, root+string(filepath.Separator))
}

// rel returns p relative to root for error messages, or p itself when it is
// not below root.
func (c *ConfinedFS) rel(p string) string {
	if r, err := filepath.Rel(c.root, p); err == nil && !strings.HasPrefix(r, "..") {
		return r
	}
	return p
}

// Resolve returns the real path that p names, with every symbolic link
// resolved, or an error wrapping ErrOutsideRoot when p or a link on the way
// leaves root. Paths that do not exist resolve lexically from the deepest
// existing directory. In-memory files resolve to themselves.
func (c *ConfinedFS) Resolve(p string) (string, error) {
	abs := c.abs(p)
	if c.isVirtual(abs) {
		return abs, nil
	}
	if !within(c.root, abs) {
		return "", fmt.Errorf("%q: %w", p, ErrOutsideRoot)
	}
	return c.walk(p, abs)
}

// walk resolves abs (clean, below root) one element at a time. Nothing
// outside root is ever looked at: a link whose target leaves root is refused
// before the target is touched.
func (c *ConfinedFS) walk(orig, abs string) (string, error) {
	rest := splitPath(strings.TrimPrefix(abs, c.root))
	cur, links, lastLink := c.root, 0, ""
	for len(rest) > 0 {
		part := rest[0]
		rest = rest[1:]
		switch part {
		case "", ".":
			continue
		case "..":
			cur = filepath.Dir(cur)
			if !within(c.root, cur) {
				return "", c.linkEscape(orig, lastLink, "")
			}
			continue
		}
		next := filepath.Join(cur, part)
		fi, err := os.Lstat(next)
		if err != nil || fi.Mode()&fs.ModeSymlink == 0 {
			if err != nil {
				// Nothing more to resolve: the rest is lexical.
				return c.lexical(orig, lastLink, next, rest)
			}
			cur = next
			continue
		}
		if links++; links > maxSymlinks {
			return "", fmt.Errorf("%q: too many levels of symbolic links", orig)
		}
		target, err := os.Readlink(next)
		if err != nil {
			return "", fmt.Errorf("reading symlink %q: %w", c.rel(next), err)
		}
		lastLink = next
		if filepath.IsAbs(target) {
			target = filepath.Clean(target)
			if !within(c.root, target) {
				return "", c.linkEscape(orig, next, target)
			}
			cur = c.root
			target = strings.TrimPrefix(target, c.root)
		}
		rest = append(splitPath(target), rest...)
	}
	return cur, nil
}

// lexical joins the unresolved remainder of a path that does not exist.
func (c *ConfinedFS) lexical(orig, lastLink, base string, rest []string) (string, error) {
	out := filepath.Join(append([]string{base}, rest...)...)
	if !within(c.root, out) {
		return "", c.linkEscape(orig, lastLink, "")
	}
	return out, nil
}

// linkEscape builds the error for a path that left root, naming the link
// responsible when there is one.
func (c *ConfinedFS) linkEscape(orig, link, target string) error {
	switch {
	case link != "" && target != "":
		return fmt.Errorf("%q: symlink %q points to %q: %w", orig, c.rel(link), target, ErrOutsideRoot)
	case link != "":
		return fmt.Errorf("%q: symlink %q leads out of root: %w", orig, c.rel(link), ErrOutsideRoot)
	default:
		return fmt.Errorf("%q: %w", orig, ErrOutsideRoot)
	}
}

func splitPath(p string) []string {
	return strings.Split(filepath.ToSlash(p), "/")
}

// Create refuses: the filesystem is read-only.
func (c *ConfinedFS) Create(p string) (filesys.File, error) {
	return nil, fmt.Errorf("create %q: %w", p, errReadOnly)
}

// Mkdir refuses: the filesystem is read-only.
func (c *ConfinedFS) Mkdir(p string) error { return fmt.Errorf("mkdir %q: %w", p, errReadOnly) }

// MkdirAll refuses: the filesystem is read-only.
func (c *ConfinedFS) MkdirAll(p string) error { return fmt.Errorf("mkdir %q: %w", p, errReadOnly) }

// RemoveAll refuses: the filesystem is read-only.
func (c *ConfinedFS) RemoveAll(p string) error { return fmt.Errorf("remove %q: %w", p, errReadOnly) }

// WriteFile refuses: the filesystem is read-only.
func (c *ConfinedFS) WriteFile(p string, _ []byte) error {
	return fmt.Errorf("write %q: %w", p, errReadOnly)
}

// Open opens a regular file inside root for reading.
func (c *ConfinedFS) Open(p string) (filesys.File, error) {
	real, err := c.regularFile(p)
	if err != nil {
		return nil, err
	}
	return os.Open(real)
}

// ReadFile returns the content of an in-memory file or of a regular file
// inside root.
func (c *ConfinedFS) ReadFile(p string) ([]byte, error) {
	real, err := c.Resolve(p)
	if err != nil {
		return nil, err
	}
	if data, ok := c.virtual[real]; ok {
		return append([]byte(nil), data...), nil
	}
	if err := c.checkRegular(p, real); err != nil {
		return nil, err
	}
	return os.ReadFile(real)
}

// regularFile resolves p and checks that it is a regular file.
func (c *ConfinedFS) regularFile(p string) (string, error) {
	real, err := c.Resolve(p)
	if err != nil {
		return "", err
	}
	return real, c.checkRegular(p, real)
}

// checkRegular checks that real, the resolved path of p, is a regular file
// on disk.
func (c *ConfinedFS) checkRegular(p, real string) error {
	if _, ok := c.virtual[real]; ok {
		return fmt.Errorf("open %q: in-memory files can only be read whole", p)
	}
	fi, err := os.Stat(real)
	if err != nil {
		return fmt.Errorf("%q: %w", p, err)
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("%q is not a regular file", p)
	}
	if readHook != nil {
		readHook(real)
	}
	return nil
}

// stat resolves p and stats the result; in-memory entries are reported
// through isDir and ok only.
func (c *ConfinedFS) stat(p string) (isDir, ok bool) {
	abs := c.abs(p)
	if _, found := c.virtual[abs]; found {
		return false, true
	}
	if c.isVirtualDir(abs) {
		return true, true
	}
	real, err := c.Resolve(abs)
	if err != nil {
		return false, false
	}
	if _, found := c.virtual[real]; found {
		return false, true
	}
	fi, err := os.Stat(real)
	if err != nil {
		return false, false
	}
	return fi.IsDir(), true
}

// size returns the bytes of real, a resolved path: an in-memory file's,
// a regular file's on disk, or 0 for anything else.
func (c *ConfinedFS) size(real string) int64 {
	if data, ok := c.virtual[real]; ok {
		return int64(len(data))
	}
	fi, err := os.Stat(real)
	if err != nil || !fi.Mode().IsRegular() {
		return 0
	}
	return fi.Size()
}

// IsDir reports whether p is a directory inside root.
func (c *ConfinedFS) IsDir(p string) bool {
	isDir, ok := c.stat(p)
	return ok && isDir
}

// Exists reports whether p exists inside root.
func (c *ConfinedFS) Exists(p string) bool {
	_, ok := c.stat(p)
	return ok
}

// ReadDir returns the names of the entries of a directory inside root.
func (c *ConfinedFS) ReadDir(p string) ([]string, error) {
	abs := c.abs(p)
	seen := map[string]bool{}
	var names []string
	add := func(name string) {
		if !seen[name] {
			seen[name] = true
			names = append(names, name)
		}
	}
	if within(c.root, abs) || !c.isVirtualDir(abs) {
		real, err := c.Resolve(abs)
		if err != nil {
			return nil, err
		}
		entries, err := os.ReadDir(real)
		if err != nil {
			return nil, fmt.Errorf("%q: %w", p, err)
		}
		for _, e := range entries {
			add(e.Name())
		}
		abs = real
	}
	for name := range c.virtual {
		if filepath.Dir(name) == abs {
			add(filepath.Base(name))
		}
	}
	sort.Strings(names)
	return names, nil
}

// CleanedAbs splits p into a confirmed directory and a file name, as
// kustomize expects. Directories are fully resolved, which is what lets
// kustomize detect cycles through links. For a file, the path is checked to
// resolve inside root but the directory and name are returned as written, so
// a file reached through a link (to elsewhere inside root) still counts as
// being in its kustomization's directory for kustomize's own root-only rule.
func (c *ConfinedFS) CleanedAbs(p string) (filesys.ConfirmedDir, string, error) {
	abs := c.abs(p)
	if _, ok := c.virtual[abs]; ok {
		return filesys.ConfirmedDir(filepath.Dir(abs)), filepath.Base(abs), nil
	}
	if c.isVirtualDir(abs) {
		return filesys.ConfirmedDir(abs), "", nil
	}
	real, err := c.Resolve(abs)
	if err != nil {
		return "", "", err
	}
	fi, err := os.Stat(real)
	if err != nil {
		return "", "", fmt.Errorf("%q: %w", p, err)
	}
	if fi.IsDir() {
		return filesys.ConfirmedDir(real), "", nil
	}
	return filesys.ConfirmedDir(filepath.Dir(abs)), filepath.Base(abs), nil
}

// Glob returns the entries of one directory inside root whose names match
// the last element of pattern. Wildcards in directory elements are not
// supported. Hidden files match only hidden patterns, as in kustomize.
func (c *ConfinedFS) Glob(pattern string) ([]string, error) {
	abs := c.abs(pattern)
	dir, base := filepath.Split(abs)
	if strings.ContainsAny(dir, `*?[\`) {
		return nil, fmt.Errorf("glob %q: wildcards are only supported in the last path element", pattern)
	}
	names, err := c.ReadDir(dir)
	if err != nil {
		return nil, nil //nolint:nilerr // like filepath.Glob, a missing directory matches nothing
	}
	var out []string
	for _, name := range names {
		ok, err := filepath.Match(base, name)
		if err != nil {
			return nil, fmt.Errorf("glob %q: %w", pattern, err)
		}
		if ok && (!strings.HasPrefix(name, ".") || strings.HasPrefix(base, ".")) {
			out = append(out, filepath.Join(dir, name))
		}
	}
	return out, nil
}

// Walk walks the tree at p (inside root) without following symbolic links
// below it.
func (c *ConfinedFS) Walk(p string, fn filepath.WalkFunc) error {
	real, err := c.Resolve(p)
	if err != nil {
		return err
	}
	return filepath.Walk(real, fn)
}
