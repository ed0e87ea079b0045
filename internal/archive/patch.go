package archive

import (
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"

	securejoin "github.com/cyphar/filepath-securejoin"
)

// Patch turns dir, the tree Extract wrote from an archive whose directory
// fingerprints are before, into the tree of the archive in r, whose
// fingerprints are after, writing only what changed: a commit to one
// folder of a large repository rewrites that folder, not the repository.
//
// A directory whose fingerprint did not change is left as it is, with
// everything under it. From every other directory, Patch removes the files
// and the directories that after does not have, then writes the entries of
// r that lie directly in it. Every entry of r is checked as Extract checks
// it, written or not, and the size cap counts the whole archive, so Patch
// refuses what Extract refuses. before and after must come from
// BuildWithFingerprints of this process, and dir must be as Extract left it.
//
// On error dir holds part of each tree: the caller removes it.
func Patch(r io.Reader, dir string, before, after Fingerprints, opts ...ExtractOption) error {
	changed := map[string]bool{}
	for d := range after {
		if before.Changed(after, d) {
			changed[d] = true
		}
	}
	for d := range changed {
		if _, existed := before[d]; existed {
			if err := clearDir(dir, d, after); err != nil {
				return err
			}
		}
	}
	return extractWanted(r, dir, newExtractOptions(opts), func(name string, isDir bool) bool {
		if isDir {
			return changed[name]
		}
		parent := path.Dir(name)
		if parent == "." {
			parent = ""
		}
		return changed[parent]
	})
}

// clearDir removes from the directory rel of the tree at dir its files,
// which the archive writes again, and the directories that after does not
// have.
func clearDir(dir, rel string, after Fingerprints) error {
	abs, err := securejoin.SecureJoin(dir, filepath.FromSlash(rel))
	if err != nil {
		return fmt.Errorf("confining directory %q: %w", displayPath(rel), err)
	}
	entries, err := os.ReadDir(abs)
	if err != nil {
		return fmt.Errorf("reading directory %q: %w", displayPath(rel), err)
	}
	for _, e := range entries {
		if _, kept := after[path.Join(rel, e.Name())]; kept && e.IsDir() {
			continue
		}
		if err := os.RemoveAll(filepath.Join(abs, e.Name())); err != nil {
			return fmt.Errorf("removing %q: %w", path.Join(rel, e.Name()), err)
		}
	}
	return nil
}
