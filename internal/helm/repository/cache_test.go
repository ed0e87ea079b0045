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
	c := NewIndexCache(2, 0)
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
	c := NewIndexCache(10, time.Minute)
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
	c := NewIndexCache(0, 0)
	c.Set("a", &Index{})
	_, ok := c.Get("a")
	g.Expect(ok).To(BeFalse())
	g.Expect(c.Len()).To(Equal(0))
}

func TestIndexCacheGetOrLoadShares(t *testing.T) {
	g := NewWithT(t)
	c := NewIndexCache(4, time.Hour)
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
	c := NewIndexCache(4, 0)
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
