package git

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"

	gogit "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/storer"
)

// A checkout that nothing will commit from needs the files of a commit and
// nothing else: no index, no comparison with what the work tree held
// before (it held nothing). writeTree writes them straight from the tree
// objects, at a fraction of the cost of a go-git checkout, which builds an
// index and looks every path up from the root of the tree again (a
// monorepo of a thousand folders checks out in a quarter of the time).
//
// The work directory is new and empty, and every directory in it is made
// by writeTree itself, with os.Mkdir: a name that is already there (a
// symbolic link, or a tree that names an entry twice) is an error, never
// followed, so nothing is written outside the work directory. Entry names
// are checked as git checks them.

// errInvalidEntry is the error of a tree entry that cannot be written.
var errInvalidEntry = errors.New("invalid tree entry")

// treeWriter writes the tree of a commit into root.
type treeWriter struct {
	objects storer.EncodedObjectStorer
	root    string
	// sparse are the only directories written (see inSparseDirs); all
	// when empty.
	sparse []string
	// budget counts the bytes written (the checkout limit).
	budget *byteBudget
	buf    []byte
}

// writeTree writes the files of commit into the empty directory root,
// limited to the sparse directories when there are any, counting their
// bytes against budget, and detaches HEAD at commit.
func writeTree(repo *gogit.Repository, commit plumbing.Hash, root string, sparse []string, budget *byteBudget) error {
	c, err := repo.CommitObject(commit)
	if err != nil {
		return fmt.Errorf("reading commit %s: %w", commit, err)
	}
	tree, err := c.Tree()
	if err != nil {
		return fmt.Errorf("reading the tree of %s: %w", commit, err)
	}
	w := &treeWriter{objects: repo.Storer, root: root, sparse: sparse, budget: budget}
	if err := w.write(tree, ""); err != nil {
		return fmt.Errorf("checking out %s: %w", commit, err)
	}
	// HEAD is detached at the commit, as a checkout leaves it.
	return repo.Storer.SetReference(plumbing.NewHashReference(plumbing.HEAD, commit))
}

// write writes the entries of tree, found at dir (slash-separated,
// relative to the root).
func (w *treeWriter) write(tree *object.Tree, dir string) error {
	for _, e := range tree.Entries {
		if err := validEntryName(e.Name); err != nil {
			return err
		}
		p := path.Join(dir, e.Name)
		if !inSparseDirs(p, w.sparse) && (e.Mode != filemode.Dir || !isSparseAncestor(p, w.sparse)) {
			continue
		}
		if err := w.writeEntry(e, p); err != nil {
			return err
		}
	}
	return nil
}

// writeEntry writes the entry e of a tree at p.
func (w *treeWriter) writeEntry(e object.TreeEntry, p string) error {
	abs := filepath.Join(w.root, filepath.FromSlash(p))
	switch e.Mode {
	case filemode.Dir:
		if err := os.Mkdir(abs, 0o755); err != nil {
			return err
		}
		sub, err := object.GetTree(w.objects, e.Hash)
		if err != nil {
			return fmt.Errorf("reading the tree of %s: %w", p, err)
		}
		return w.write(sub, p)
	case filemode.Submodule:
		// Without its submodules a checkout has an empty folder for
		// each, as git leaves it.
		return os.Mkdir(abs, 0o755)
	case filemode.Symlink:
		target, err := w.readLink(e.Hash, p)
		if err != nil {
			return err
		}
		return os.Symlink(string(target), abs)
	case filemode.Regular, filemode.Deprecated, filemode.Executable:
		return w.writeFile(e, p, abs)
	}
	return fmt.Errorf("%w %q: unknown mode %s", errInvalidEntry, p, e.Mode)
}

// writeFile writes the regular file e at abs.
func (w *treeWriter) writeFile(e object.TreeEntry, p, abs string) (err error) {
	blob, err := object.GetBlob(w.objects, e.Hash)
	if err != nil {
		return fmt.Errorf("reading %s: %w", p, err)
	}
	if err := w.budget.take(blob.Size); err != nil {
		return err
	}
	mode, err := e.Mode.ToOSFileMode()
	if err != nil {
		return err
	}
	from, err := blob.Reader()
	if err != nil {
		return fmt.Errorf("reading %s: %w", p, err)
	}
	defer from.Close()
	to, err := os.OpenFile(abs, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode.Perm())
	if err != nil {
		return err
	}
	defer func() {
		if cerr := to.Close(); err == nil {
			err = cerr
		}
	}()
	if w.buf == nil {
		w.buf = make([]byte, 32<<10)
	}
	_, err = io.CopyBuffer(to, from, w.buf)
	return err
}

// maxLinkTarget is the longest target a symbolic link may have (Linux's
// PATH_MAX): a longer one is refused before it is read into memory.
const maxLinkTarget = 4096

// readLink reads the target of the link at p, stored in the blob hash,
// counting it against the budget.
func (w *treeWriter) readLink(hash plumbing.Hash, p string) ([]byte, error) {
	blob, err := object.GetBlob(w.objects, hash)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", p, err)
	}
	if blob.Size > maxLinkTarget {
		return nil, fmt.Errorf("%w %q: a link target of %d bytes", errInvalidEntry, p, blob.Size)
	}
	if err := w.budget.take(blob.Size); err != nil {
		return nil, err
	}
	r, err := blob.Reader()
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", p, err)
	}
	defer r.Close()
	return io.ReadAll(r)
}

// validEntryName refuses the names git refuses to check out: empty, "."
// or "..", with a path separator or a control character, or naming the
// repository's own folder (.git, or git~1 as Windows abbreviates it).
func validEntryName(name string) error {
	switch strings.ToLower(name) {
	case "", ".", "..", ".git", "git~1":
		return fmt.Errorf("%w %q", errInvalidEntry, name)
	}
	if strings.ContainsAny(name, "/\\") || strings.ContainsFunc(name, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
		return fmt.Errorf("%w %q", errInvalidEntry, name)
	}
	return nil
}
