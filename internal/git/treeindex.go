package git

import (
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/storer"
)

// treeIndex lists what a checkout of a commit holds, by directory, read
// from the tree objects and checked before anything is written: every
// name valid, no name twice in a directory, every byte within the checkout
// budget. Its entries are written to disk (write) or read from memory
// (treeFS).
type treeIndex struct {
	// dirs are the entries of each directory, by slash-separated path (""
	// for the root), sorted by name as a directory on disk lists them.
	dirs map[string][]indexEntry
	// links tells whether the tree holds a symbolic link.
	links bool
}

// indexEntry is one entry of a directory of a treeIndex.
type indexEntry struct {
	name string
	mode filemode.FileMode
	hash plumbing.Hash
	// size is the size of a file or of a link's target.
	size int64
}

// isDir tells whether the entry is a directory of the checkout: a tree, or
// a submodule, which a checkout without its submodules leaves empty, as
// git does.
func (e indexEntry) isDir() bool {
	return e.mode == filemode.Dir || e.mode == filemode.Submodule
}

// treeIndexer builds a treeIndex.
type treeIndexer struct {
	objects storer.EncodedObjectStorer
	// sparse are the only directories indexed (see inSparseDirs); all when
	// empty.
	sparse []string
	// budget counts the bytes of the files and links (the checkout limit).
	budget *byteBudget
	index  *treeIndex
}

// indexTree returns the index of tree, limited to the sparse directories
// when there are any, counting its bytes against budget.
func indexTree(objects storer.EncodedObjectStorer, tree *object.Tree, sparse []string, budget *byteBudget) (*treeIndex, error) {
	ix := &treeIndexer{objects: objects, sparse: sparse, budget: budget, index: &treeIndex{dirs: map[string][]indexEntry{}}}
	if err := ix.add(tree, ""); err != nil {
		return nil, err
	}
	return ix.index, nil
}

// add indexes the entries of tree, found at dir, and of its subtrees.
func (ix *treeIndexer) add(tree *object.Tree, dir string) error {
	entries := make([]indexEntry, 0, len(tree.Entries))
	for _, e := range tree.Entries {
		if err := validEntryName(e.Name); err != nil {
			return err
		}
		p := path.Join(dir, e.Name)
		if !inSparseDirs(p, ix.sparse) && (e.Mode != filemode.Dir || !isSparseAncestor(p, ix.sparse)) {
			continue
		}
		entry, err := ix.entry(e, p)
		if err != nil {
			return err
		}
		entries = append(entries, entry)
	}
	slices.SortFunc(entries, func(a, b indexEntry) int { return strings.Compare(a.name, b.name) })
	for i := 1; i < len(entries); i++ {
		if entries[i].name == entries[i-1].name {
			return fmt.Errorf("%w %q: %w", errInvalidEntry, path.Join(dir, entries[i].name), fs.ErrExist)
		}
	}
	ix.index.dirs[dir] = entries
	return nil
}

// entry indexes the entry e of a tree, at p.
func (ix *treeIndexer) entry(e object.TreeEntry, p string) (indexEntry, error) {
	entry := indexEntry{name: e.Name, mode: e.Mode, hash: e.Hash}
	switch e.Mode {
	case filemode.Dir:
		sub, err := object.GetTree(ix.objects, e.Hash)
		if err != nil {
			return entry, fmt.Errorf("reading the tree of %s: %w", p, err)
		}
		return entry, ix.add(sub, p)
	case filemode.Submodule:
		ix.index.dirs[p] = nil
		return entry, nil
	case filemode.Symlink:
		ix.index.links = true
		size, err := ix.take(e.Hash, p)
		if err == nil && size > maxLinkTarget {
			err = fmt.Errorf("%w %q: a link target of %d bytes", errInvalidEntry, p, size)
		}
		entry.size = size
		return entry, err
	case filemode.Regular, filemode.Deprecated, filemode.Executable:
		size, err := ix.take(e.Hash, p)
		entry.size = size
		return entry, err
	}
	return entry, fmt.Errorf("%w %q: unknown mode %s", errInvalidEntry, p, e.Mode)
}

// take returns the size of the blob hash, at p, and counts it against the
// budget.
func (ix *treeIndexer) take(hash plumbing.Hash, p string) (int64, error) {
	obj, err := ix.objects.EncodedObject(plumbing.BlobObject, hash)
	if err != nil {
		return 0, fmt.Errorf("reading %s: %w", p, err)
	}
	return obj.Size(), ix.budget.take(obj.Size())
}

// maxLinkTarget is the longest target a symbolic link may have (Linux's
// PATH_MAX): a longer one is refused before it is read into memory.
const maxLinkTarget = 4096

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
