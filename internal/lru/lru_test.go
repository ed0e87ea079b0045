package lru

import (
	"testing"

	. "github.com/onsi/gomega"
)

// step is one call of a test: an Add of key with size (get false) or a
// Get of key (get true); want is what it returns.
type step struct {
	key  string
	size int64
	get  bool
	want bool
}

// added and got make steps.
func added(key string, size int64, kept bool) step { return step{key: key, size: size, want: kept} }
func got(key string, found bool) step              { return step{key: key, get: true, want: found} }

func TestCacheBounds(t *testing.T) {
	tests := []struct {
		name       string
		maxEntries int
		maxBytes   int64
		steps      []step
		wantKeys   []string // the keys kept at the end, least recently used first
		wantBytes  int64
	}{{
		name: "evicted by bytes, least recently used first", maxBytes: 100,
		steps:    []step{added("a", 40, true), added("b", 40, true), added("c", 40, true), got("a", false)},
		wantKeys: []string{"b", "c"}, wantBytes: 80,
	}, {
		name: "a lookup keeps an entry", maxBytes: 100,
		steps:    []step{added("a", 40, true), added("b", 40, true), got("a", true), added("c", 40, true), got("b", false)},
		wantKeys: []string{"a", "c"}, wantBytes: 80,
	}, {
		name: "one large entry evicts several", maxBytes: 100,
		steps:    []step{added("a", 30, true), added("b", 30, true), added("c", 30, true), added("d", 90, true)},
		wantKeys: []string{"d"}, wantBytes: 90,
	}, {
		name: "an entry larger than the budget is not kept, and evicts nothing", maxBytes: 100,
		steps:    []step{added("a", 60, true), added("big", 101, false), got("big", false)},
		wantKeys: []string{"a"}, wantBytes: 60,
	}, {
		name: "an entry of exactly the budget is kept", maxBytes: 100,
		steps:    []step{added("a", 60, true), added("b", 100, true)},
		wantKeys: []string{"b"}, wantBytes: 100,
	}, {
		name: "a replaced entry counts its new size", maxBytes: 100,
		steps:    []step{added("a", 60, true), added("a", 30, true), added("b", 70, true)},
		wantKeys: []string{"a", "b"}, wantBytes: 100,
	}, {
		name: "replaced by a value too large: the old one is dropped", maxBytes: 100,
		steps:    []step{added("a", 60, true), added("a", 200, false), got("a", false)},
		wantKeys: nil, wantBytes: 0,
	}, {
		name: "evicted by number", maxEntries: 2, maxBytes: 100,
		steps:    []step{added("a", 1, true), added("b", 1, true), added("c", 1, true)},
		wantKeys: []string{"b", "c"}, wantBytes: 2,
	}, {
		name: "no byte budget keeps nothing", maxBytes: 0,
		steps:    []step{added("a", 0, false), got("a", false)},
		wantKeys: nil, wantBytes: 0,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			c := New[string, string](tt.maxEntries, tt.maxBytes)
			for _, s := range tt.steps {
				if s.get {
					v, ok := c.Get(s.key)
					g.Expect(ok).To(Equal(s.want), "get %s", s.key)
					if ok {
						g.Expect(v).To(Equal(s.key))
					}
					continue
				}
				g.Expect(c.Add(s.key, s.key, s.size)).To(Equal(s.want), "add %s", s.key)
			}
			g.Expect(keys(c)).To(Equal(tt.wantKeys))
			g.Expect(c.Len()).To(Equal(len(tt.wantKeys)))
			g.Expect(c.Bytes()).To(Equal(tt.wantBytes))
		})
	}
}

// keys lists the keys of c, least recently used first, without using
// them.
func keys(c *Cache[string, string]) []string {
	var out []string
	for el := c.order.Back(); el != nil; el = el.Prev() {
		out = append(out, el.Value.(*entry[string, string]).key)
	}
	return out
}
