package fetch

import (
	"context"
	"errors"
	"os"
	"path"
	"sync"
	"time"

	"github.com/windlass-dev/windlass/api/meta"
	"github.com/windlass-dev/windlass/internal/workdir"
)

// Builds only read the artifact they build (what a build adds, such as a
// generated kustomization or decrypted files, stays in memory), so the
// objects that build the same artifact share one extracted tree: the N
// Kustomizations of a monorepo extract each revision once, not N times.

// maxIdleTrees is how many extracted trees no build uses are kept, the
// most recently used, for the next builds of the same artifacts.
const maxIdleTrees = 16

// treeKey identifies the tree of an artifact: its digest, or, for an
// artifact published without one or only reached by its URL (see
// Local.Fetch), its URL, revision and digest. Knowing the digest of an
// artifact in this storage does not give its tree to an ExternalArtifact
// of another producer that claims it: that one is downloaded from its own
// URL, and checked against the digest.
func treeKey(a *meta.Artifact) string {
	if a.Digest != "" && a.Path != "" {
		return a.Digest
	}
	return "url:" + a.URL + "@" + a.Revision + "@" + a.Digest
}

// TreeCache holds the extracted trees of artifacts, by treeKey, for
// readers that only read them. Its zero value is ready to use.
type TreeCache struct {
	mu    sync.Mutex
	trees map[string]*sourceTree
}

type sourceTree struct {
	dir      string
	artifact meta.Artifact // what the tree holds
	ready    chan struct{} // closed once the tree is extracted, or failed
	err      error
	users    int
	lastUsed time.Time
}

// AcquireArtifact returns the folder of the tree of the artifact a, which
// f fetches into a new private folder when no tree of a is kept, and the
// function that ends its use. A failed fetch is not kept: every build that
// waited for it gets its error, and the next one tries again. When no
// tree of a is kept but an idle tree of an earlier artifact of the same
// source is (its file in the same folder of storage), and f is a Patcher,
// that tree becomes a's by a patch that writes only the folders that
// changed: the Kustomizations of a monorepo then pay for a commit's
// folders, not for the repository's. A tree the patch cannot make is
// removed and a's extracted anew.
//
// Sources with the same content share one tree, but not one address: a
// build that waited for the fetch of another source's artifact of the same
// digest, which failed (its storage gone with a replica, say, or its
// caller's context ended), fetches its own artifact once before it fails.
func (s *TreeCache) AcquireArtifact(ctx context.Context, a meta.Artifact, f Fetcher) (string, func(), error) {
	dir, release, failed, err := s.acquire(ctx, a, f)
	if err != nil && failed != nil && ctx.Err() == nil && worthOwnFetch(a, failed) {
		dir, release, _, err = s.acquire(ctx, a, f)
	}
	return dir, release, err
}

// worthOwnFetch tells whether a build of a, whose wait for the shared
// fetch of failed ended in its error, may succeed with a fetch of its own:
// the shared fetch was of another address, or was cancelled by its caller.
func worthOwnFetch(a meta.Artifact, failed *sourceTree) bool {
	return failed.artifact.URL != a.URL || errors.Is(failed.err, context.Canceled) || errors.Is(failed.err, context.DeadlineExceeded)
}

// acquire is one try of AcquireArtifact; when it waited for a fetch that
// another build started and that failed, it returns that tree too.
func (s *TreeCache) acquire(ctx context.Context, a meta.Artifact, f Fetcher) (string, func(), *sourceTree, error) {
	key := treeKey(&a)
	s.mu.Lock()
	if s.trees == nil {
		s.trees = map[string]*sourceTree{}
	}
	t, found := s.trees[key]
	var previous *sourceTree
	if !found {
		if _, canPatch := f.(Patcher); canPatch {
			previous = s.takeIdleOfSource(a)
		}
		t = &sourceTree{ready: make(chan struct{}), artifact: a}
		s.trees[key] = t
	}
	t.users++
	s.mu.Unlock()
	release := func() { s.release(t) }

	if !found {
		t.dir, t.err = makeTree(ctx, a, f, previous)
		if t.err != nil {
			s.mu.Lock()
			delete(s.trees, key)
			s.mu.Unlock()
		}
		close(t.ready)
	}
	select {
	case <-t.ready:
	case <-ctx.Done():
		release()
		return "", nil, nil, ctx.Err()
	}
	if t.err != nil {
		release()
		if found {
			return "", nil, t, t.err
		}
		return "", nil, nil, t.err
	}
	return t.dir, release, nil, nil
}

// makeTree patches previous, the tree of an earlier artifact of a's source
// when there is one, into a's tree, or fetches a with f into a new folder.
func makeTree(ctx context.Context, a meta.Artifact, f Fetcher, previous *sourceTree) (string, error) {
	if previous != nil {
		patched, err := f.(Patcher).Patch(ctx, previous.artifact, a, previous.dir)
		if patched && err == nil {
			return previous.dir, nil
		}
		_ = os.RemoveAll(previous.dir)
	}
	return extractTree(func(dir string) error { return f.Fetch(ctx, a, dir) })
}

// takeIdleOfSource removes from the cache, and returns, the most recently
// used idle tree of an artifact of the same source as a, or nil.
func (s *TreeCache) takeIdleOfSource(a meta.Artifact) *sourceTree {
	source := sourceFolder(a)
	if source == "" {
		return nil
	}
	var newest string
	for key, t := range s.trees {
		if t.users == 0 && sourceFolder(t.artifact) == source &&
			(newest == "" || t.lastUsed.After(s.trees[newest].lastUsed)) {
			newest = key
		}
	}
	if newest == "" {
		return nil
	}
	t := s.trees[newest]
	delete(s.trees, newest)
	return t
}

// sourceFolder is the folder of storage that holds a's file, shared by the
// artifacts of one source; "" for an artifact without a path or a digest.
func sourceFolder(a meta.Artifact) string {
	if a.Path == "" || a.Digest == "" {
		return ""
	}
	return path.Dir(a.Path)
}

func extractTree(extract func(dir string) error) (string, error) {
	dir, err := workdir.MkdirTemp("windlass-artifact-")
	if err != nil {
		return "", err
	}
	if err := extract(dir); err != nil {
		_ = os.RemoveAll(dir)
		return "", err
	}
	return dir, nil
}

// release ends one use of t and removes the least recently used idle trees
// past maxIdleTrees.
func (s *TreeCache) release(t *sourceTree) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t.users--
	t.lastUsed = time.Now()
	for s.idle() > maxIdleTrees {
		s.removeOldestIdle()
	}
}

func (s *TreeCache) idle() int {
	n := 0
	for _, t := range s.trees {
		if t.users == 0 {
			n++
		}
	}
	return n
}

func (s *TreeCache) removeOldestIdle() {
	var oldest string
	for d, t := range s.trees {
		if t.users == 0 && (oldest == "" || t.lastUsed.Before(s.trees[oldest].lastUsed)) {
			oldest = d
		}
	}
	_ = os.RemoveAll(s.trees[oldest].dir)
	delete(s.trees, oldest)
}

// RemoveAll removes every tree no build uses; a controller calls it when
// it stops.
func (s *TreeCache) RemoveAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for d, t := range s.trees {
		if t.users == 0 {
			_ = os.RemoveAll(t.dir)
			delete(s.trees, d)
		}
	}
}
