package workdir

import (
	"os"
	"sync"
)

// A run that is done with a folder of many files (a clone of a monorepo)
// need not wait for their removal before it reports what it found: the
// folder is handed to one goroutine that removes such folders in turn.
// The backlog is bounded: when it is full the caller removes the folder
// itself, so the disk a process holds stays bounded by what its runs hold
// at once, plus laterBacklog folders.

// laterBacklog is how many folders may wait for their removal.
const laterBacklog = 64

// later removes the folders handed to RemoveLater.
var later = struct {
	once  sync.Once
	queue chan string
	mu    sync.Mutex
	idle  *sync.Cond
	// pending counts the folders handed over and not yet removed.
	pending int
}{}

// RemoveLater removes dir and everything in it soon, in the background
// (nothing when dir is empty), ignoring errors as a deferred os.RemoveAll
// does: what stays behind is in the process's work folder, which Remove
// and Sweep remove.
func RemoveLater(dir string) {
	if dir == "" {
		return
	}
	later.once.Do(func() {
		later.queue = make(chan string, laterBacklog)
		later.idle = sync.NewCond(&later.mu)
		go removeQueued()
	})
	later.mu.Lock()
	later.pending++
	later.mu.Unlock()
	select {
	case later.queue <- dir:
	default:
		removed(dir)
	}
}

// removeQueued removes the queued folders, one at a time.
func removeQueued() {
	for dir := range later.queue {
		removed(dir)
	}
}

// removed removes dir and counts it done.
func removed(dir string) {
	_ = os.RemoveAll(dir)
	later.mu.Lock()
	defer later.mu.Unlock()
	later.pending--
	if later.pending == 0 {
		later.idle.Broadcast()
	}
}

// WaitRemoved returns once every folder handed to RemoveLater so far is
// removed.
func WaitRemoved() {
	later.mu.Lock()
	defer later.mu.Unlock()
	for later.pending > 0 {
		later.idle.Wait()
	}
}
