package parallel

import (
	"sync/atomic"
	"testing"
	"time"
)

func TestDoRunsEveryIndexWithinTheLimit(t *testing.T) {
	for _, tt := range []struct{ n, limit int }{{0, 4}, {1, 4}, {10, 3}, {5, 0}} {
		var running, peak atomic.Int32
		seen := make([]atomic.Bool, tt.n)
		Do(tt.n, tt.limit, func(i int) {
			now := running.Add(1)
			for {
				p := peak.Load()
				if now <= p || peak.CompareAndSwap(p, now) {
					break
				}
			}
			time.Sleep(time.Millisecond)
			seen[i].Store(true)
			running.Add(-1)
		})
		for i := range seen {
			if !seen[i].Load() {
				t.Errorf("n=%d limit=%d: index %d was not run", tt.n, tt.limit, i)
			}
		}
		if limit := int32(max(tt.limit, 1)); peak.Load() > limit {
			t.Errorf("n=%d limit=%d: %d ran at once", tt.n, tt.limit, peak.Load())
		}
	}
}
