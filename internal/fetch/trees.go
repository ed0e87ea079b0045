package fetch

import (
	"context"
	"os"
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

// TreeKey identifies the tree of an artifact: its digest, or, for an
// artifact published without one, its URL and revision.
func TreeKey(a *meta.Artifact) string {
	if a.Digest != "" {
		return a.Digest
	}
	return "url:" + a.URL + "@" + a.Revision
}

// TreeCache holds the extracted trees of artifacts, by TreeKey, for
// readers that only read them. Its zero value is ready to use.
type TreeCache struct {
	mu    sync.Mutex
	trees map[string]*sourceTree
}

type sourceTree struct {
	dir      string
	ready    chan struct{} // closed once the tree is extracted, or failed
	err      error
	users    int
	lastUsed time.Time
}

// Acquire returns the folder of the tree of the artifact with key,
// extracting it with extract into a new private folder when no tree of it is
// kept, and the function that ends its use. A failed extraction is not kept:
// every build that waited for it gets its error, and the next one tries
// again.
func (s *TreeCache) Acquire(ctx context.Context, key string, extract func(dir string) error) (string, func(), error) {
	s.mu.Lock()
	if s.trees == nil {
		s.trees = map[string]*sourceTree{}
	}
	t, found := s.trees[key]
	if !found {
		t = &sourceTree{ready: make(chan struct{})}
		s.trees[key] = t
	}
	t.users++
	s.mu.Unlock()
	release := func() { s.release(t) }

	if !found {
		t.dir, t.err = extractTree(extract)
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
		return "", nil, ctx.Err()
	}
	if t.err != nil {
		release()
		return "", nil, t.err
	}
	return t.dir, release, nil
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
