package ui

import "sync"

// ring keeps the latest entries up to its capacity, the oldest replaced
// first; it is safe for concurrent use.
type ring[T any] struct {
	mu      sync.Mutex
	entries []T
	next    int
}

// newRing returns a ring of size entries.
func newRing[T any](size int) *ring[T] {
	return &ring[T]{entries: make([]T, 0, size)}
}

// add keeps e, in place of the oldest entry when full.
func (r *ring[T]) add(e T) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.entries) < cap(r.entries) {
		r.entries = append(r.entries, e)
		return
	}
	r.entries[r.next] = e
	r.next = (r.next + 1) % len(r.entries)
}

// newest returns at most max of the entries that pass keep, newest first.
func (r *ring[T]) newest(max int, keep func(T) bool) []T {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []T
	for i := range r.entries {
		e := r.entries[(r.next+len(r.entries)-1-i)%len(r.entries)]
		if keep(e) {
			out = append(out, e)
			if len(out) == max {
				break
			}
		}
	}
	return out
}
