package image

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

// TestTurns: holders of one key never overlap, other keys do not wait, a
// waiter whose context ends gives up, and no key is kept once unused.
func TestTurns(t *testing.T) {
	g := NewWithT(t)
	var tr turns
	var inside, most atomic.Int32
	var wg sync.WaitGroup
	for range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			unlock, err := tr.lock(context.Background(), "repo#main")
			if err != nil {
				t.Error(err)
				return
			}
			n := inside.Add(1)
			for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
			}
			time.Sleep(time.Millisecond)
			inside.Add(-1)
			unlock()
		}()
	}
	wg.Wait()
	g.Expect(most.Load()).To(Equal(int32(1)), "one holder at a time")

	unlock, err := tr.lock(context.Background(), "repo#main")
	g.Expect(err).NotTo(HaveOccurred())
	other, err := tr.lock(context.Background(), "repo#update-web")
	g.Expect(err).NotTo(HaveOccurred(), "another branch does not wait")
	other()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = tr.lock(ctx, "repo#main")
	g.Expect(err).To(MatchError(context.Canceled))
	unlock()
	g.Expect(tr.keys).To(BeEmpty())
}
