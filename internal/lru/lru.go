// Package lru is a cache that keeps the entries used last, bounded in
// number and in bytes. Each entry carries its size, an estimate of the
// memory it holds given by the caller; an entry larger than the whole
// budget is not kept. A Cache is not safe for concurrent use: its users
// hold their own lock.
package lru

import "container/list"

// Cache keeps values by key, evicting the least recently used entries
// past its bounds.
type Cache[K comparable, V any] struct {
	maxEntries int
	maxBytes   int64
	bytes      int64
	items      map[K]*list.Element
	order      *list.List // front: most recently used
}

// entry is one cached value and its size.
type entry[K comparable, V any] struct {
	key   K
	value V
	size  int64
}

// New returns a cache of at most maxEntries entries (zero or less: no
// bound on their number) holding at most maxBytes bytes together (zero or
// less: nothing is kept).
func New[K comparable, V any](maxEntries int, maxBytes int64) *Cache[K, V] {
	return &Cache[K, V]{maxEntries: maxEntries, maxBytes: maxBytes, items: map[K]*list.Element{}, order: list.New()}
}

// Get returns the value of key and makes it the most recently used.
func (c *Cache[K, V]) Get(key K) (V, bool) {
	el, ok := c.items[key]
	if !ok {
		var zero V
		return zero, false
	}
	c.order.MoveToFront(el)
	return el.Value.(*entry[K, V]).value, true
}

// Add keeps value under key as the most recently used entry, replacing
// the value key had, and evicts the least recently used entries past the
// bounds. It returns false, and keeps nothing (dropping what key had),
// when size alone is more than the byte budget.
func (c *Cache[K, V]) Add(key K, value V, size int64) bool {
	c.Remove(key)
	if size > c.maxBytes || c.maxBytes <= 0 {
		return false
	}
	c.items[key] = c.order.PushFront(&entry[K, V]{key: key, value: value, size: size})
	c.bytes += size
	for c.bytes > c.maxBytes || (c.maxEntries > 0 && c.order.Len() > c.maxEntries) {
		c.remove(c.order.Back())
	}
	return true
}

// Remove drops the entry of key, if any.
func (c *Cache[K, V]) Remove(key K) {
	if el, ok := c.items[key]; ok {
		c.remove(el)
	}
}

// remove drops one entry.
func (c *Cache[K, V]) remove(el *list.Element) {
	e := c.order.Remove(el).(*entry[K, V])
	delete(c.items, e.key)
	c.bytes -= e.size
}

// Len returns how many entries are kept.
func (c *Cache[K, V]) Len() int { return c.order.Len() }

// Bytes returns the sum of the sizes of the entries kept.
func (c *Cache[K, V]) Bytes() int64 { return c.bytes }
