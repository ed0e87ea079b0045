package repository

import (
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/windlass-dev/windlass/internal/lru"
)

// IndexCache keeps parsed indexes by the revision (digest) of their
// normalised form, so that the HelmCharts of one repository share one
// parsed copy. It holds at most maxEntries indexes and maxBytes bytes
// (each index counted as its MemorySize), evicting the least recently
// used; an index larger than maxBytes alone is not kept. An entry unused
// for ttl expires. It is safe for concurrent use.
type IndexCache struct {
	ttl time.Duration
	now func() time.Time

	mu       sync.Mutex
	entries  *lru.Cache[string, *cacheEntry]
	inflight map[string]*load

	hits, misses atomic.Int64
}

// cacheEntry is one cached index.
type cacheEntry struct {
	index   *Index
	expires time.Time
}

// load is a GetOrLoad call in progress, which other callers of the same
// digest wait for.
type load struct {
	done  chan struct{}
	index *Index
	err   error
}

// NewIndexCache returns a cache of at most maxEntries indexes holding at
// most maxBytes bytes together (either zero or less: nothing is kept, but
// concurrent GetOrLoad calls of one digest still share one load); ttl zero
// or less means entries do not expire.
func NewIndexCache(maxEntries int, maxBytes int64, ttl time.Duration) *IndexCache {
	if maxEntries <= 0 {
		maxBytes = 0
	}
	return &IndexCache{
		ttl: ttl, now: time.Now,
		entries: lru.New[string, *cacheEntry](maxEntries, maxBytes), inflight: map[string]*load{},
	}
}

// Get returns the index cached for digest, counting a hit or a miss.
func (c *IndexCache) Get(digest string) (*Index, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	idx, ok := c.get(digest)
	if ok {
		c.hits.Add(1)
	} else {
		c.misses.Add(1)
	}
	return idx, ok
}

// get returns a live entry and renews its expiry; c.mu is held.
func (c *IndexCache) get(digest string) (*Index, bool) {
	e, ok := c.entries.Get(digest)
	if !ok {
		return nil, false
	}
	if c.ttl > 0 && c.now().After(e.expires) {
		c.entries.Remove(digest)
		return nil, false
	}
	e.expires = c.now().Add(c.ttl)
	return e.index, true
}

// Set caches idx under digest, evicting the least recently used indexes
// beyond the bounds.
func (c *IndexCache) Set(digest string, idx *Index) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.set(digest, idx)
}

// set caches idx; c.mu is held.
func (c *IndexCache) set(digest string, idx *Index) {
	if idx == nil {
		return
	}
	c.entries.Add(digest, &cacheEntry{index: idx, expires: c.now().Add(c.ttl)}, idx.MemorySize())
}

// GetOrLoad returns the index cached for digest, or calls load once for
// all the concurrent callers of that digest and caches its result.
func (c *IndexCache) GetOrLoad(digest string, loadFn func() (*Index, error)) (*Index, error) {
	c.mu.Lock()
	if idx, ok := c.get(digest); ok {
		c.mu.Unlock()
		c.hits.Add(1)
		return idx, nil
	}
	c.misses.Add(1)
	if l, ok := c.inflight[digest]; ok {
		c.mu.Unlock()
		<-l.done
		return l.index, l.err
	}
	l := &load{done: make(chan struct{})}
	c.inflight[digest] = l
	c.mu.Unlock()

	defer c.finish(digest, l)
	l.err = errLoadPanicked // kept if loadFn panics, for the waiters
	l.index, l.err = loadFn()
	return l.index, l.err
}

// errLoadPanicked is what the waiters of a load that panicked get.
var errLoadPanicked = errors.New("loading the index panicked")

// finish ends the load l of digest: it caches the result and wakes the
// waiters.
func (c *IndexCache) finish(digest string, l *load) {
	c.mu.Lock()
	delete(c.inflight, digest)
	if l.err == nil {
		c.set(digest, l.index)
	}
	c.mu.Unlock()
	close(l.done)
}

// Len returns how many indexes are cached, expired ones included until
// they are looked up or evicted.
func (c *IndexCache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.entries.Len()
}

// Bytes returns the estimated memory the cached indexes hold.
func (c *IndexCache) Bytes() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.entries.Bytes()
}

// Hits returns how many lookups found their index.
func (c *IndexCache) Hits() int64 { return c.hits.Load() }

// Misses returns how many lookups did not find their index.
func (c *IndexCache) Misses() int64 { return c.misses.Load() }
