// Package parallel runs independent pieces of work at the same time, a
// bounded number at once.
package parallel

import "sync"

// Do calls f(0) … f(n-1), at most limit at once (one at a time when limit is
// below one), and returns when every call has returned. With one piece of
// work, f runs on the calling goroutine.
func Do(n, limit int, f func(i int)) {
	if n == 1 {
		f(0)
		return
	}
	sem := make(chan struct{}, max(limit, 1))
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			f(i)
		}()
	}
	wg.Wait()
}
