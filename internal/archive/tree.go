package archive

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// A Tree is a directory tree that BuildTree archives, read by
// slash-separated paths relative to its root, "." naming the root itself.
// An fs.ReadDirFS is a Tree; so is Dir, the tree of a directory on disk.
type Tree interface {
	// ReadDir lists the directory name, sorted by file name.
	ReadDir(name string) ([]fs.DirEntry, error)
	// Open opens the file name for reading.
	Open(name string) (fs.File, error)
}

// linkResolver is a Tree that can hold symbolic links.
type linkResolver interface {
	// resolveLink returns the path, in the tree, of the regular file the
	// symbolic link name resolves to, possibly through other links, and
	// false when it dangles, loops, resolves outside the tree or to
	// something else than a regular file.
	resolveLink(name string) (string, bool)
}

// ErrLinkInTree is matched by the error of BuildTree when the tree holds
// a symbolic link and cannot resolve it (only Dir can).
var ErrLinkInTree = errors.New("the tree holds a symbolic link")

// Dir returns the tree of the directory root on disk. Unlike os.DirFS, it
// reads any name the directory holds, valid UTF-8 or not. Its symbolic
// links resolve only when root is absolute and free of links itself, as
// BuildWithFingerprints makes it; sourceignore reads it without links.
func Dir(root string) Tree {
	return dirTree{root: root}
}

// dirTree is the Tree of a directory on disk.
type dirTree struct {
	root string
}

// ReadDir implements Tree.
func (d dirTree) ReadDir(name string) ([]fs.DirEntry, error) {
	return os.ReadDir(d.join(name))
}

// Open implements Tree.
func (d dirTree) Open(name string) (fs.File, error) {
	return os.Open(d.join(name))
}

// join returns the path on disk of name.
func (d dirTree) join(name string) string {
	return filepath.Join(d.root, filepath.FromSlash(name))
}

// resolveLink implements linkResolver: the root must be absolute and free
// of symbolic links (see resolveRoot).
func (d dirTree) resolveLink(name string) (string, bool) {
	target, err := filepath.EvalSymlinks(d.join(name))
	if err != nil {
		return "", false // dangling or looping
	}
	if !within(d.root, target) {
		return "", false
	}
	fi, err := os.Lstat(target)
	if err != nil || !fi.Mode().IsRegular() {
		return "", false
	}
	rel, err := filepath.Rel(d.root, target)
	if err != nil {
		return "", false
	}
	return filepath.ToSlash(rel), true
}

// treePath is the name of the path rel ("" for the root) in a Tree.
func treePath(rel string) string {
	if rel == "" {
		return "."
	}
	return rel
}

// linkError is the error of BuildTree for a link the tree cannot resolve.
func linkError(rel string) error {
	return fmt.Errorf("%w at %q", ErrLinkInTree, rel)
}
