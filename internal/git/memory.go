package git

import (
	"errors"
	"fmt"
	"sync/atomic"
)

// The byte limits of one Clone bound what one repository may cost; the
// memory budget bounds what all the Clones of the process hold in memory
// together (pack data being received, objects inflated), so that many
// large repositories cloned at once cannot exhaust the controller's memory
// either. A Clone that would go over the budget fails at once with a
// [*BusyError], which a retry mends once other Clones have ended; what a
// Clone holds is given back when its Client is closed, or when the Clone
// fails.

// DefaultMaxMemoryBytes is the default memory budget of all Clones: 2 GiB.
const DefaultMaxMemoryBytes int64 = 2 << 30

// ErrBusy is matched, through errors.Is, by a [*BusyError].
var ErrBusy = errors.New("the clones in progress hold the memory budget")

// BusyError reports a Clone stopped because the Clones in progress hold the
// process's memory budget. Unlike a [*TooLargeError], a retry can succeed.
type BusyError struct {
	// Max is the budget, in bytes.
	Max int64
}

// Error implements error.
func (e *BusyError) Error() string {
	return fmt.Sprintf("%v (%s); retry later", ErrBusy, formatBytes(e.Max))
}

// Is makes errors.Is(err, ErrBusy) true.
func (e *BusyError) Is(target error) bool {
	return target == ErrBusy
}

// memoryBudget counts the bytes that the Clones of the process hold.
type memoryBudget struct {
	max  atomic.Int64
	used atomic.Int64
}

// cloneMemory is the memory budget of the process's Clones.
var cloneMemory = newMemoryBudget()

func newMemoryBudget() *memoryBudget {
	m := &memoryBudget{}
	m.max.Store(DefaultMaxMemoryBytes)
	return m
}

// SetMaxMemoryBytes sets the memory budget of all Clones of the process;
// zero restores DefaultMaxMemoryBytes. Clones in progress keep what they
// hold.
func SetMaxMemoryBytes(n int64) {
	if n <= 0 {
		n = DefaultMaxMemoryBytes
	}
	cloneMemory.max.Store(n)
}

// MemoryInUse returns the bytes that the Clones of the process hold now.
func MemoryInUse() int64 {
	return cloneMemory.used.Load()
}

// take counts n more bytes, or returns a [*BusyError] and counts nothing
// when that would exceed the budget.
func (m *memoryBudget) take(n int64) error {
	for {
		used, max := m.used.Load(), m.max.Load()
		if n > max-used {
			return &BusyError{Max: max}
		}
		if m.used.CompareAndSwap(used, used+n) {
			return nil
		}
	}
}

// hold takes n bytes of the process's memory budget for the Clone; a
// refusal is remembered, so that the Clone reports it whatever go-git made
// of it.
func (l *cloneLimits) hold(n int64) error {
	if err := cloneMemory.take(n); err != nil {
		l.busy.CompareAndSwap(nil, err.(*BusyError))
		return err
	}
	l.held.Add(n)
	return nil
}

// unhold gives n bytes back to the process's memory budget.
func (l *cloneLimits) unhold(n int64) {
	l.held.Add(-n)
	cloneMemory.used.Add(-n)
}

// releaseMemory gives back everything the Clone holds. A nil cloneLimits
// holds nothing.
func (l *cloneLimits) releaseMemory() {
	if l == nil {
		return
	}
	if n := l.held.Swap(0); n != 0 {
		cloneMemory.used.Add(-n)
	}
}
