package git

import (
	"errors"
	"io"
	"io/fs"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/storer"
)

// treeFS is the checkout of a commit read from its objects in memory: an
// fs.ReadDirFS of the files, directories and submodule folders a
// checkout would write (see treeIndex), with the modes it would give them.
// Its names are those of the tree, which git does not require to be UTF-8;
// it holds no symbolic link (a tree with one is written to disk instead).
type treeFS struct {
	objects storer.EncodedObjectStorer
	index   *treeIndex
}

// Open implements fs.FS.
func (t *treeFS) Open(name string) (fs.File, error) {
	if !validPath(name) {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrInvalid}
	}
	if name == "." {
		return &treeDir{info: treeInfo{name: ".", mode: fs.ModeDir | 0o755}, entries: t.index.dirs[""]}, nil
	}
	e, ok := t.lookup(name)
	if !ok {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
	}
	switch {
	case e.isDir():
		return &treeDir{info: e.info(), entries: t.index.dirs[name]}, nil
	case e.mode == filemode.Symlink:
		return nil, &fs.PathError{Op: "open", Path: name, Err: errors.ErrUnsupported}
	}
	r, err := openBlob(t.objects, e.hash, name)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: name, Err: err}
	}
	return &treeFile{info: e.info(), ReadCloser: r}, nil
}

// ReadDir implements fs.ReadDirFS.
func (t *treeFS) ReadDir(name string) ([]fs.DirEntry, error) {
	if !validPath(name) {
		return nil, &fs.PathError{Op: "readdir", Path: name, Err: fs.ErrInvalid}
	}
	dir := name
	if name == "." {
		dir = ""
	}
	entries, ok := t.index.dirs[dir]
	if !ok {
		return nil, &fs.PathError{Op: "readdir", Path: name, Err: fs.ErrNotExist}
	}
	return dirEntries(entries), nil
}

// validPath is fs.ValidPath, without its demand that names be UTF-8.
func validPath(name string) bool {
	return fs.ValidPath(strings.ToValidUTF8(name, "_"))
}

// lookup returns the entry at name, a slash-separated path.
func (t *treeFS) lookup(name string) (indexEntry, bool) {
	dir, base := path.Split(name)
	entries := t.index.dirs[strings.TrimSuffix(dir, "/")]
	i, ok := slices.BinarySearchFunc(entries, base, func(e indexEntry, name string) int { return strings.Compare(e.name, name) })
	if !ok {
		return indexEntry{}, false
	}
	return entries[i], true
}

// dirEntries returns entries as fs.DirEntry values.
func dirEntries(entries []indexEntry) []fs.DirEntry {
	out := make([]fs.DirEntry, len(entries))
	for i, e := range entries {
		out[i] = e.info()
	}
	return out
}

// info returns the file information of the entry as a checkout writes it.
func (e indexEntry) info() treeInfo {
	switch {
	case e.isDir():
		return treeInfo{name: e.name, mode: fs.ModeDir | 0o755}
	case e.mode == filemode.Symlink:
		return treeInfo{name: e.name, mode: fs.ModeSymlink | 0o777, size: e.size}
	case e.mode == filemode.Executable:
		return treeInfo{name: e.name, mode: 0o755, size: e.size}
	}
	return treeInfo{name: e.name, mode: 0o644, size: e.size}
}

// treeInfo is both the fs.FileInfo and the fs.DirEntry of an entry.
type treeInfo struct {
	name string
	mode fs.FileMode
	size int64
}

func (i treeInfo) Name() string               { return i.name }
func (i treeInfo) Size() int64                { return i.size }
func (i treeInfo) Mode() fs.FileMode          { return i.mode }
func (i treeInfo) ModTime() time.Time         { return time.Time{} }
func (i treeInfo) IsDir() bool                { return i.mode.IsDir() }
func (i treeInfo) Sys() any                   { return nil }
func (i treeInfo) Type() fs.FileMode          { return i.mode.Type() }
func (i treeInfo) Info() (fs.FileInfo, error) { return i, nil }

// treeFile is an open file of a treeFS.
type treeFile struct {
	info treeInfo
	io.ReadCloser
}

// Stat implements fs.File.
func (f *treeFile) Stat() (fs.FileInfo, error) { return f.info, nil }

// treeDir is an open directory of a treeFS.
type treeDir struct {
	info    treeInfo
	entries []indexEntry
	read    int
}

// Stat implements fs.File.
func (d *treeDir) Stat() (fs.FileInfo, error) { return d.info, nil }

// Read implements fs.File: a directory has no content.
func (d *treeDir) Read([]byte) (int, error) {
	return 0, &fs.PathError{Op: "read", Path: d.info.name, Err: errors.New("is a directory")}
}

// Close implements fs.File.
func (d *treeDir) Close() error { return nil }

// ReadDir implements fs.ReadDirFile.
func (d *treeDir) ReadDir(n int) ([]fs.DirEntry, error) {
	rest := d.entries[d.read:]
	if n > 0 && len(rest) == 0 {
		return nil, io.EOF
	}
	if n > 0 && n < len(rest) {
		rest = rest[:n]
	}
	d.read += len(rest)
	return dirEntries(rest), nil
}
