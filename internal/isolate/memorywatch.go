package isolate

import "time"

// memoryCheck is how often a child at work checks the memory it holds.
const memoryCheck = 2 * time.Millisecond

// memoryWatch checks, every memoryCheck while a job runs and never while
// the child waits for one, whether the child holds more memory than it
// may: a job is what makes the memory grow, and an idle child that woke
// every few milliseconds to look would spend a few percent of a core
// doing nothing.
type memoryWatch struct {
	over func() bool
	busy chan bool
}

// newMemoryWatch returns a watch that asks over whether the child holds
// more memory than it may.
func newMemoryWatch(over func() bool) *memoryWatch {
	return &memoryWatch{over: over, busy: make(chan bool)}
}

// working tells the watch that a job starts (true) or ended (false); it
// returns once the watch knows.
func (w *memoryWatch) working(busy bool) {
	w.busy <- busy
}

// run checks while a job runs, and calls exceeded whenever a check finds
// the memory over (in a child, exceeded exits).
func (w *memoryWatch) run(exceeded func()) {
	ticker := time.NewTicker(memoryCheck)
	ticker.Stop()
	for {
		select {
		case busy := <-w.busy:
			if !busy {
				ticker.Stop()
				continue
			}
			ticker.Reset(memoryCheck)
		case <-ticker.C:
		}
		if w.over() {
			exceeded()
		}
	}
}
