package repository

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

func TestIndexCacheBoundAndLRU(t *testing.T) {
	g := NewWithT(t)
	c := NewIndexCache(2, 1<<20, 0)
	a, b, d := &Index{APIVersion: "a"}, &Index{APIVersion: "b"}, &Index{APIVersion: "d"}
	c.Set("a", a)
	c.Set("b", b)
	got, ok := c.Get("a") // a is now the most recently used
	g.Expect(ok).To(BeTrue())
	g.Expect(got).To(BeIdenticalTo(a))
	c.Set("d", d) // evicts b
	g.Expect(c.Len()).To(Equal(2))
	_, ok = c.Get("b")
	g.Expect(ok).To(BeFalse())
	_, ok = c.Get("d")
	g.Expect(ok).To(BeTrue())
	g.Expect(c.Hits()).To(Equal(int64(2)))
	g.Expect(c.Misses()).To(Equal(int64(1)))
}

func TestIndexCacheTTL(t *testing.T) {
	g := NewWithT(t)
	now := time.Unix(1000, 0)
	c := NewIndexCache(10, 1<<20, time.Minute)
	c.now = func() time.Time { return now }
	c.Set("a", &Index{})
	now = now.Add(50 * time.Second)
	_, ok := c.Get("a") // renews the expiry
	g.Expect(ok).To(BeTrue())
	now = now.Add(50 * time.Second)
	_, ok = c.Get("a")
	g.Expect(ok).To(BeTrue(), "a lookup renews the entry")
	now = now.Add(61 * time.Second)
	_, ok = c.Get("a")
	g.Expect(ok).To(BeFalse())
	g.Expect(c.Len()).To(Equal(0))
}

func TestIndexCacheDisabled(t *testing.T) {
	g := NewWithT(t)
	c := NewIndexCache(0, 1<<20, 0)
	c.Set("a", &Index{})
	_, ok := c.Get("a")
	g.Expect(ok).To(BeFalse())
	g.Expect(c.Len()).To(Equal(0))
}

func TestIndexCacheGetOrLoadShares(t *testing.T) {
	g := NewWithT(t)
	c := NewIndexCache(4, 1<<20, time.Hour)
	var loads atomic.Int32
	release := make(chan struct{})
	load := func() (*Index, error) {
		loads.Add(1)
		<-release
		return ParseIndex([]byte(sampleIndex))
	}
	const callers = 50
	results := make([]*Index, callers)
	var wg sync.WaitGroup
	for i := range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			idx, err := c.GetOrLoad("sha256:x", load)
			if err == nil {
				results[i] = idx
			}
		}()
	}
	g.Eventually(func() int64 { return c.Misses() }).Should(Equal(int64(callers)))
	close(release)
	wg.Wait()
	g.Expect(loads.Load()).To(Equal(int32(1)), "one parse for all the concurrent callers")
	for _, idx := range results {
		g.Expect(idx).NotTo(BeNil())
		g.Expect(idx).To(BeIdenticalTo(results[0]), "every caller shares one copy")
	}
	idx, err := c.GetOrLoad("sha256:x", func() (*Index, error) { return nil, errors.New("not called") })
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(idx).To(BeIdenticalTo(results[0]))
	g.Expect(c.Hits()).To(Equal(int64(1)))
}

func TestIndexCacheGetOrLoadError(t *testing.T) {
	g := NewWithT(t)
	c := NewIndexCache(4, 1<<20, 0)
	_, err := c.GetOrLoad("k", func() (*Index, error) { return nil, fmt.Errorf("boom") })
	g.Expect(err).To(MatchError("boom"))
	g.Expect(c.Len()).To(Equal(0), "errors are not cached")

	g.Expect(func() {
		_, _ = c.GetOrLoad("p", func() (*Index, error) { panic("bad index") })
	}).To(Panic())
	idx, err := c.GetOrLoad("p", func() (*Index, error) { return &Index{}, nil })
	g.Expect(err).NotTo(HaveOccurred(), "a panicking load does not block the key")
	g.Expect(idx).NotTo(BeNil())
}

// indexOf returns a parsed index of one chart with n versions.
func indexOf(t *testing.T, n int) *Index {
	t.Helper()
	idx := &Index{APIVersion: "v1", Entries: map[string][]*ChartVersion{}}
	for i := range n {
		idx.Entries["app"] = append(idx.Entries["app"], &ChartVersion{Name: "app", Version: fmt.Sprintf("1.0.%d", i),
			URLs: []string{fmt.Sprintf("app-1.0.%d.tgz", i)}})
	}
	return idx
}

// security-2 risk 4: the cache is bounded in bytes (MemorySize) besides
// entries: indexes past the budget evict the least recently used, and an
// index larger than the whole budget is used once and not kept.
func TestIndexCacheBoundInBytes(t *testing.T) {
	small, large := indexOf(t, 10), indexOf(t, 100)
	budget := 3*small.MemorySize() + small.MemorySize()/2
	tests := []struct {
		name      string
		maxBytes  int64
		sets      []*Index // cached under "0", "1", …
		wantKept  []string
		wantBytes int64
	}{
		{name: "within the budget", maxBytes: budget, sets: []*Index{small, small, small},
			wantKept: []string{"0", "1", "2"}, wantBytes: 3 * small.MemorySize()},
		{name: "past it: the least recently used goes", maxBytes: budget, sets: []*Index{small, small, small, small},
			wantKept: []string{"1", "2", "3"}, wantBytes: 3 * small.MemorySize()},
		{name: "one larger than the budget is not kept", maxBytes: budget, sets: []*Index{small, large},
			wantKept: []string{"0"}, wantBytes: small.MemorySize()},
		{name: "a large one evicts several", maxBytes: large.MemorySize() + small.MemorySize(), sets: []*Index{small, small, large},
			wantKept: []string{"1", "2"}, wantBytes: small.MemorySize() + large.MemorySize()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(large.MemorySize()).To(BeNumerically(">", budget))
			c := NewIndexCache(100, tt.maxBytes, 0)
			for i, idx := range tt.sets {
				c.Set(fmt.Sprint(i), idx)
			}
			var kept []string
			for i := range tt.sets {
				if _, ok := c.Get(fmt.Sprint(i)); ok {
					kept = append(kept, fmt.Sprint(i))
				}
			}
			g.Expect(kept).To(Equal(tt.wantKept))
			g.Expect(c.Bytes()).To(Equal(tt.wantBytes))
		})
	}
}

func TestIndexCacheGetOrLoadOversized(t *testing.T) {
	g := NewWithT(t)
	large := indexOf(t, 100)
	c := NewIndexCache(4, large.MemorySize()-1, 0)
	var loads int
	for range 2 {
		idx, err := c.GetOrLoad("big", func() (*Index, error) { loads++; return large, nil })
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(idx).To(BeIdenticalTo(large), "returned to its caller")
	}
	g.Expect(loads).To(Equal(2), "not kept, so loaded again")
	g.Expect(c.Len()).To(BeZero())
	g.Expect(c.Bytes()).To(BeZero())
}
