package artifact

import (
	"fmt"
	"path"
	"strings"
	"sync"

	"github.com/windlass-dev/windlass/api/meta"
	"github.com/windlass-dev/windlass/internal/archive"
)

// treeFingerprints keeps the directory fingerprints of the last two trees
// archived for each object, by the object's folder in storage: enough to
// tell which folders its newest artifact changed.
type treeFingerprints struct {
	mu    sync.Mutex
	byDir map[string][2]archivedTree // the newest first
}

type archivedTree struct {
	digest       string
	fingerprints archive.Fingerprints
}

// record keeps the fingerprints of the tree archived as a.
func (t *treeFingerprints) record(a meta.Artifact, fps archive.Fingerprints) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.byDir == nil {
		t.byDir = map[string][2]archivedTree{}
	}
	dir := path.Dir(a.Path)
	trees := t.byDir[dir]
	if trees[0].digest != a.Digest {
		trees[1] = trees[0]
	}
	trees[0] = archivedTree{digest: a.Digest, fingerprints: fps}
	t.byDir[dir] = trees
}

// get returns the fingerprints of the tree of a, if they are kept.
func (t *treeFingerprints) get(a meta.Artifact) archive.Fingerprints {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, tree := range t.byDir[path.Dir(a.Path)] {
		if tree.digest != "" && tree.digest == a.Digest {
			return tree.fingerprints
		}
	}
	return nil
}

// forget drops the fingerprints of the trees of the object whose artifacts
// are in dir.
func (t *treeFingerprints) forget(dir string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.byDir, dir)
}

// ForgetTrees drops the fingerprints kept for the object of kind in
// namespace with name, as RemoveAll does: for an object deleted while
// another process handled its finalizer.
func (s *Storage) ForgetTrees(kind, namespace, name string) {
	s.fingerprints.forget(objectDir(kind, namespace, name))
}

// PathChanged reports whether the folder at p (relative to the tree's root,
// "" or "./" for the root) differs between the trees of the artifacts old
// and new of one object. known is false when this Storage did not archive
// both, or the trees were too large to keep their fingerprints.
func (s *Storage) PathChanged(old, new meta.Artifact, p string) (changed, known bool) {
	before, after := s.fingerprints.get(old), s.fingerprints.get(new)
	if before == nil || after == nil {
		return false, false
	}
	return before.Changed(after, cleanTreePath(p)), true
}

// cleanTreePath returns p as a key of archive.Fingerprints.
func cleanTreePath(p string) string {
	return strings.TrimPrefix(path.Clean("/"+p), "/")
}

// PatchTo turns dir, where ExtractTo extracted the artifact old, into the
// tree of new, an artifact of the same object, verifying new's digest
// first and writing only the folders that changed (see archive.Patch).
// patched is false, and dir untouched, when this Storage did not archive
// both or kept no fingerprints of them: extract new instead. On error, dir
// holds part of each tree: the caller removes it.
func (s *Storage) PatchTo(old, new meta.Artifact, dir string, opts ...archive.ExtractOption) (patched bool, err error) {
	if path.Dir(old.Path) != path.Dir(new.Path) {
		return false, nil
	}
	before, after := s.fingerprints.get(old), s.fingerprints.get(new)
	if before == nil || after == nil {
		return false, nil
	}
	f, err := s.openVerified(new)
	if err != nil {
		return false, err
	}
	defer f.Close()
	if err := archive.Patch(f, dir, before, after, opts...); err != nil {
		return false, fmt.Errorf("patching the tree of artifact %s: %w", new.Path, err)
	}
	return true, nil
}
