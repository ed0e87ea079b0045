package git

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"

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
// A checkout that is archived and thrown away need not be written at all
// (see treeFS).
//
// The work directory is new and empty, and every directory in it is made
// by writeTree itself, with os.Mkdir: a name that is already there (a
// symbolic link, or a tree that names an entry twice) is an error, never
// followed, so nothing is written outside the work directory. Entry names
// are checked as git checks them, and the whole tree before anything is
// written (see treeIndex).

// errInvalidEntry is the error of a tree entry that cannot be written.
var errInvalidEntry = errors.New("invalid tree entry")

// commitIndex returns the index of the tree of commit (see indexTree).
func commitIndex(repo *gogit.Repository, commit plumbing.Hash, sparse []string, budget *byteBudget) (*treeIndex, error) {
	c, err := repo.CommitObject(commit)
	if err != nil {
		return nil, fmt.Errorf("reading commit %s: %w", commit, err)
	}
	tree, err := c.Tree()
	if err != nil {
		return nil, fmt.Errorf("reading the tree of %s: %w", commit, err)
	}
	ix, err := indexTree(repo.Storer, tree, sparse, budget)
	if err != nil {
		return nil, fmt.Errorf("checking out %s: %w", commit, err)
	}
	return ix, nil
}

// writeTree writes the files of commit into the empty directory root,
// limited to the sparse directories when there are any, counting their
// bytes against budget, and detaches HEAD at commit.
func writeTree(repo *gogit.Repository, commit plumbing.Hash, root string, sparse []string, budget *byteBudget) error {
	ix, err := commitIndex(repo, commit, sparse, budget)
	if err != nil {
		return err
	}
	if err := ix.write(repo.Storer, root); err != nil {
		return fmt.Errorf("checking out %s: %w", commit, err)
	}
	return detachHead(repo, commit)
}

// detachHead detaches HEAD at commit, as a checkout leaves it.
func detachHead(repo *gogit.Repository, commit plumbing.Hash) error {
	return repo.Storer.SetReference(plumbing.NewHashReference(plumbing.HEAD, commit))
}

// write writes the entries of the index into the empty directory root.
func (ix *treeIndex) write(objects storer.EncodedObjectStorer, root string) error {
	w := &treeWriter{objects: objects, index: ix, root: root}
	return w.writeDir("")
}

// treeWriter writes the entries of an index under root.
type treeWriter struct {
	objects storer.EncodedObjectStorer
	index   *treeIndex
	root    string
	buf     []byte
}

// writeDir writes the entries of the directory dir (slash-separated,
// relative to the root).
func (w *treeWriter) writeDir(dir string) error {
	for _, e := range w.index.dirs[dir] {
		p := path.Join(dir, e.name)
		if err := w.writeEntry(e, p, filepath.Join(w.root, filepath.FromSlash(p))); err != nil {
			return err
		}
	}
	return nil
}

// writeEntry writes the entry e of the index, at p, to abs.
func (w *treeWriter) writeEntry(e indexEntry, p, abs string) error {
	switch {
	case e.isDir():
		if err := os.Mkdir(abs, 0o755); err != nil {
			return err
		}
		return w.writeDir(p)
	case e.mode == filemode.Symlink:
		target, err := w.readBlob(e.hash, p)
		if err != nil {
			return err
		}
		return os.Symlink(string(target), abs)
	}
	return w.writeFile(e, p, abs)
}

// writeFile writes the regular file e at abs.
func (w *treeWriter) writeFile(e indexEntry, p, abs string) (err error) {
	mode, err := e.mode.ToOSFileMode()
	if err != nil {
		return err
	}
	from, err := openBlob(w.objects, e.hash, p)
	if err != nil {
		return err
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

// readBlob reads the blob hash, at p: a link's target, which the index
// bounds.
func (w *treeWriter) readBlob(hash plumbing.Hash, p string) ([]byte, error) {
	r, err := openBlob(w.objects, hash, p)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return io.ReadAll(r)
}

// openBlob opens the content of the blob hash, at p.
func openBlob(objects storer.EncodedObjectStorer, hash plumbing.Hash, p string) (io.ReadCloser, error) {
	blob, err := object.GetBlob(objects, hash)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", p, err)
	}
	r, err := blob.Reader()
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", p, err)
	}
	return r, nil
}
