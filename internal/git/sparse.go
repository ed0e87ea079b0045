package git

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/go-git/go-billy/v5/util"
	gogit "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// gitmodulesFile is where a repository declares its submodules.
const gitmodulesFile = ".gitmodules"

// checkoutTree checks out commit in the work tree with a detached HEAD,
// limited to the sparse directories when there are any.
//
// go-git's sparse checkout matches directories by string prefix, so "a"
// also checks out "ab/": callers run pruneOutsideSparse afterwards.
func checkoutTree(repo *gogit.Repository, commit plumbing.Hash, sparse []string) error {
	w, err := repo.Worktree()
	if err != nil {
		return err
	}
	err = w.Checkout(&gogit.CheckoutOptions{
		Hash:                      commit,
		Force:                     true,
		SparseCheckoutDirectories: sparse,
	})
	if err != nil {
		return fmt.Errorf("checking out %s: %w", commit, err)
	}
	return nil
}

// writeGitmodules writes the .gitmodules of commit into the work tree when a
// sparse checkout left it out, so the submodules inside the sparse
// directories can be found. pruneOutsideSparse removes it again.
func writeGitmodules(repo *gogit.Repository, commit plumbing.Hash) error {
	w, err := repo.Worktree()
	if err != nil {
		return err
	}
	if _, err := w.Filesystem.Lstat(gitmodulesFile); err == nil {
		return nil
	}
	c, err := repo.CommitObject(commit)
	if err != nil {
		return err
	}
	f, err := c.File(gitmodulesFile)
	if errors.Is(err, object.ErrFileNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	content, err := f.Contents()
	if err != nil {
		return err
	}
	return util.WriteFile(w.Filesystem, gitmodulesFile, []byte(content), 0o644)
}

// pruneOutsideSparse removes from the work tree at root everything that is
// neither inside one of dirs nor a directory on the way to one. Symbolic
// links are removed as links, never followed; .git is kept.
func pruneOutsideSparse(root string, dirs []string) error {
	return filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, p)
		if err != nil || rel == "." {
			return err
		}
		rel = filepath.ToSlash(rel)
		switch {
		case rel == ".git":
			return filepath.SkipDir
		case inSparseDirs(rel, dirs):
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		case d.IsDir() && isSparseAncestor(rel, dirs):
			return nil
		}
		if err := os.RemoveAll(p); err != nil {
			return fmt.Errorf("sparse checkout: removing %s: %w", rel, err)
		}
		if d.IsDir() {
			return filepath.SkipDir
		}
		return nil
	})
}

// isSparseAncestor reports whether the directory p contains one of dirs.
func isSparseAncestor(p string, dirs []string) bool {
	for _, d := range dirs {
		if strings.HasPrefix(d, p+"/") {
			return true
		}
	}
	return false
}

// inSparseDirs reports whether the slash-separated path p is one of dirs or
// lies below one of them. With no dirs everything is included.
func inSparseDirs(p string, dirs []string) bool {
	if len(dirs) == 0 {
		return true
	}
	for _, d := range dirs {
		if p == d || strings.HasPrefix(p, d+"/") {
			return true
		}
	}
	return false
}
