package artifact

import (
	"path"
	"sync"

	"github.com/windlass-dev/windlass/api/meta"
)

// keyedMutex is a set of mutexes created on demand and dropped when unused.
type keyedMutex struct {
	mu    sync.Mutex
	locks map[string]*refMutex
}

// refMutex is a mutex with the number of goroutines holding or awaiting it.
type refMutex struct {
	sync.Mutex
	refs int
}

// lock acquires the mutex for key and returns the function that releases
// it; calling that function more than once has no further effect.
func (k *keyedMutex) lock(key string) func() {
	k.mu.Lock()
	if k.locks == nil {
		k.locks = map[string]*refMutex{}
	}
	m, ok := k.locks[key]
	if !ok {
		m = &refMutex{}
		k.locks[key] = m
	}
	m.refs++
	k.mu.Unlock()

	m.Lock()
	var once sync.Once
	return func() {
		once.Do(func() {
			m.Unlock()
			k.mu.Lock()
			m.refs--
			if m.refs == 0 {
				delete(k.locks, key)
			}
			k.mu.Unlock()
		})
	}
}

// Lock acquires the lock of the artifact's directory (<kind>/<namespace>/
// <name>), blocking until it is free, and returns the function that releases
// it. The lock is held in memory, within this process only: the storage is
// owned by a single leader-elected controller process, so a file lock would
// add failure modes (stale lock files, unsupported file systems) without
// adding safety.
func (s *Storage) Lock(a meta.Artifact) (unlock func(), err error) {
	if err := validatePath(a.Path); err != nil {
		return nil, err
	}
	return s.locks.lock(path.Dir(a.Path)), nil
}
