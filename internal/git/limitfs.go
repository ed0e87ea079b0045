package git

import (
	"os"

	"github.com/go-git/go-billy/v5"
)

// limitedFS is the work tree of a Clone: every byte written to a file in
// it, by the checkout of the repository and of its submodules, counts
// against the checkout limit, so that a small repository cannot fill the
// disk with many copies of one large blob.
type limitedFS struct {
	billy.Filesystem
	budget *byteBudget
}

// newLimitedFS returns fs with its file writes counted against budget.
func newLimitedFS(fs billy.Filesystem, budget *byteBudget) *limitedFS {
	return &limitedFS{Filesystem: fs, budget: budget}
}

// Create implements billy.Basic.
func (fs *limitedFS) Create(name string) (billy.File, error) {
	return fs.wrap(fs.Filesystem.Create(name))
}

// OpenFile implements billy.Basic.
func (fs *limitedFS) OpenFile(name string, flag int, perm os.FileMode) (billy.File, error) {
	return fs.wrap(fs.Filesystem.OpenFile(name, flag, perm))
}

// TempFile implements billy.TempFile.
func (fs *limitedFS) TempFile(dir, prefix string) (billy.File, error) {
	return fs.wrap(fs.Filesystem.TempFile(dir, prefix))
}

// Chroot implements billy.Chroot; the new file system shares the budget.
func (fs *limitedFS) Chroot(path string) (billy.Filesystem, error) {
	sub, err := fs.Filesystem.Chroot(path)
	if err != nil {
		return nil, err
	}
	return newLimitedFS(sub, fs.budget), nil
}

// wrap counts the writes to f.
func (fs *limitedFS) wrap(f billy.File, err error) (billy.File, error) {
	if err != nil {
		return nil, err
	}
	return &limitedFile{File: f, budget: fs.budget}, nil
}

// limitedFile is a file of a limitedFS.
type limitedFile struct {
	billy.File
	budget *byteBudget
}

// Write writes p unless that takes the Clone over its checkout limit.
func (f *limitedFile) Write(p []byte) (int, error) {
	if err := f.budget.take(int64(len(p))); err != nil {
		return 0, err
	}
	return f.File.Write(p)
}
