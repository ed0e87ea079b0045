package helm

import (
	"sync"

	hchart "helm.sh/helm/v4/pkg/chart/v2"

	chartload "github.com/windlass-dev/windlass/internal/helm/chart"
	"github.com/windlass-dev/windlass/internal/lru"
)

// DefaultChartCacheMaxMemory is how many bytes the loaded charts that the
// helm controller keeps may hold together, as chartload.MemorySize
// estimates them.
const DefaultChartCacheMaxMemory int64 = 128 << 20

// chartCacheEntries is how many loaded charts are kept at most.
const chartCacheEntries = 64

// loadedCharts keeps the charts loaded from artifacts, by digest: the
// releases of one chart share one loaded copy. It holds at most
// chartCacheEntries charts and its byte budget, evicting the least
// recently used; a chart larger than the budget alone is used once and
// not kept. It keeps nothing until init.
type loadedCharts struct {
	mu    sync.Mutex
	cache *lru.Cache[string, *hchart.Chart]
}

// init empties the cache and gives it a budget of maxBytes.
func (c *loadedCharts) init(maxBytes int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.cache = lru.New[string, *hchart.Chart](chartCacheEntries, maxBytes)
}

// get returns the chart loaded from the artifact of digest, or nil.
func (c *loadedCharts) get(digest string) *hchart.Chart {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cache == nil {
		return nil
	}
	ch, _ := c.cache.Get(digest)
	return ch
}

// put keeps ch, loaded from the artifact of digest, and says whether it
// was kept.
func (c *loadedCharts) put(digest string, ch *hchart.Chart) bool {
	size := chartload.MemorySize(ch)
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.cache != nil && c.cache.Add(digest, ch, size)
}

// bytes returns the estimated memory of the charts kept.
func (c *loadedCharts) bytes() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cache == nil {
		return 0
	}
	return c.cache.Bytes()
}

// chartCacheMaxMemory returns the byte budget of the loaded charts.
func (r *HelmReleaseReconciler) chartCacheMaxMemory() int64 {
	if r.ChartCacheMaxMemory > 0 {
		return r.ChartCacheMaxMemory
	}
	return DefaultChartCacheMaxMemory
}
