package isolate

import "time"

// memoryCheck is how often a child at work checks the memory it holds.
const memoryCheck = 2 * time.Millisecond

// memoryWatch checks whether the child holds more memory than it may when
// a job starts, every memoryCheck while it runs, and when it ends, but
// never while the child waits for the next: a job is what makes the
// memory grow, and an idle child that woke every few milliseconds to look
// would spend a few percent of a core doing nothing.
type memoryWatch struct {
	over     func() bool
	exceeded func()
	busy     chan bool
}

// newMemoryWatch returns a watch that asks over whether the child holds
// more memory than it may, and calls exceeded whenever it does (in a
// child, exceeded exits). Its checks run once run is started.
func newMemoryWatch(over func() bool, exceeded func()) *memoryWatch {
	return &memoryWatch{over: over, exceeded: exceeded, busy: make(chan bool)}
}

// working tells the watch that a job starts (true) or ended (false). The
// check at the end of a job is done before it returns, so that memory a
// job left held is the job's, not the next one's.
func (w *memoryWatch) working(busy bool) {
	w.busy <- busy
	if !busy {
		w.check()
	}
}

// check calls exceeded when the memory is over.
func (w *memoryWatch) check() {
	if w.over() {
		w.exceeded()
	}
}

// run checks when a job starts and while it runs.
func (w *memoryWatch) run() {
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
		w.check()
	}
}
