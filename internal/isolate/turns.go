package isolate

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"
)

// Limits bound each child of one kind of work.
type Limits struct {
	// Memory is the most memory one child may use, in bytes.
	Memory int64
	// Output is the most bytes one child's answer may hold.
	Output int64
	// Concurrency is how many children may run at once; the others wait
	// for a turn.
	Concurrency int
	// Time is the most time one child's work may take once it has its
	// input, whatever its caller allows, so that no child holds a turn
	// for long.
	Time time.Duration
}

// Or returns l with its zero (or negative) fields taken from defaults.
func (l Limits) Or(defaults Limits) Limits {
	if l.Memory <= 0 {
		l.Memory = defaults.Memory
	}
	if l.Output <= 0 {
		l.Output = defaults.Output
	}
	if l.Concurrency <= 0 {
		l.Concurrency = defaults.Concurrency
	}
	if l.Time <= 0 {
		l.Time = defaults.Time
	}
	return l
}

// MemoryAtOnce returns the most memory the children use together: Memory
// times Concurrency.
func (l Limits) MemoryAtOnce() int64 {
	return l.Memory * int64(l.Concurrency)
}

// Errors are a kind of work's own errors for the limits that end a child.
type Errors struct {
	// Memory stands for ErrMemory.
	Memory error
	// Output stands for ErrOutput.
	Output error
	// Timeout stands for ErrTime and for the end of the caller's context.
	Timeout error
}

// idleTimeout is how long a child of Turns waits for its next job before
// it is ended.
var idleTimeout = 30 * time.Second

// Turns starts the children of one kind of work: at most
// Limits.Concurrency at once, with their memory from a Pool. A child whose
// job ended well does the next job, one job at a time, instead of a new
// child being started for it (starting one costs tens of milliseconds of
// CPU, more than most jobs): it waits 30 seconds for one, does at most
// maxJobs, and gives its memory back to the pool at once when another
// child needs it. A child that failed, was killed or went past a limit is
// never used again.
type Turns struct {
	role   string
	limits Limits
	errs   Errors
	pool   *Pool

	mu sync.Mutex
	// live counts the children started and not ended, idle ones included.
	live int
	idle []*idleChild
	// changed is closed, and replaced, when a child goes idle or ends.
	changed chan struct{}
	// started counts the children started.
	started int64
}

// idleChild is a child waiting for its next job, ended when its timer
// fires first.
type idleChild struct {
	proc  *Process
	timer *time.Timer
}

// NewTurns returns the Turns of the children of role, bounded by limits
// (whose fields must be set), their limits told with errs, and their
// memory taken from pool, which other work may share; nil stands for a
// pool of their own, of limits.MemoryAtOnce.
func NewTurns(role string, limits Limits, errs Errors, pool *Pool) *Turns {
	if pool == nil {
		pool = NewPool(limits.MemoryAtOnce())
	}
	t := &Turns{role: role, limits: limits, errs: errs, pool: pool, changed: make(chan struct{})}
	pool.register(t)
	return t
}

// Limits returns the limits of t's children.
func (t *Turns) Limits() Limits { return t.limits }

// Started returns how many children t has started.
func (t *Turns) Started() int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.started
}

// Start waits for a turn until ctx ends, then gives the work a child, an
// idle one or a new one, whose work may take budget (Limits.Time when
// zero or longer). The child's turn ends with its End, whose errors, like
// Start's, are the work's own.
func (t *Turns) Start(ctx context.Context, budget time.Duration) (*Process, error) {
	if budget <= 0 || budget > t.limits.Time {
		budget = t.limits.Time
	}
	job := Job{Role: t.role, Memory: t.limits.Memory, Output: t.limits.Output, Time: budget}
	for {
		t.mu.Lock()
		if proc := t.takeIdleLocked(); proc != nil {
			t.mu.Unlock()
			proc.begin(ctx, job)
			return proc, nil
		}
		if t.live < t.limits.Concurrency {
			t.live++
			t.started++
			t.mu.Unlock()
			return t.startChild(ctx, job)
		}
		changed := t.changed
		t.mu.Unlock()
		select {
		case <-changed:
		case <-ctx.Done():
			return nil, t.explain(fmt.Errorf("waiting for a turn: %w", ctx.Err()), budget)
		}
	}
}

// startChild starts a new child for job; its turn is taken.
func (t *Turns) startChild(ctx context.Context, job Job) (*Process, error) {
	proc, err := t.pool.Start(ctx, job)
	if err != nil {
		t.ended()
		return nil, t.explain(err, job.Time)
	}
	release := proc.release
	proc.release = func() {
		release()
		t.ended()
	}
	proc.explain = func(err error) error { return t.explain(err, proc.job.Time) }
	proc.reuse = t.park
	return proc, nil
}

// takeIdleLocked returns the idle child that waited least, alive, or nil.
func (t *Turns) takeIdleLocked() *Process {
	for n := len(t.idle); n > 0; n = len(t.idle) {
		c := t.idle[n-1]
		t.idle = t.idle[:n-1]
		c.timer.Stop()
		idlePIDs.Delete(c.proc.cmd.Process.Pid)
		select {
		case <-c.proc.exited:
			go c.proc.retire() // killed from outside while idle
		default:
			return c.proc
		}
	}
	return nil
}

// park keeps proc, whose job ended well, for the next job, unless another
// child waits for the memory it holds.
func (t *Turns) park(proc *Process) {
	if t.pool.waiting.Load() > 0 {
		proc.retire()
		return
	}
	c := &idleChild{proc: proc}
	idlePIDs.Store(proc.cmd.Process.Pid, struct{}{})
	t.mu.Lock()
	c.timer = time.AfterFunc(idleTimeout, func() { t.retire(c) })
	t.idle = append(t.idle, c)
	t.signalLocked()
	t.mu.Unlock()
}

// retire ends c, when it is still idle.
func (t *Turns) retire(c *idleChild) {
	t.mu.Lock()
	i := slices.Index(t.idle, c)
	if i >= 0 {
		t.idle = slices.Delete(t.idle, i, i+1)
	}
	t.mu.Unlock()
	if i >= 0 {
		c.proc.retire()
	}
}

// retireIdle ends every idle child, which gives its memory back to the
// pool once it has exited.
func (t *Turns) retireIdle() {
	t.mu.Lock()
	idle := t.idle
	t.idle = nil
	t.mu.Unlock()
	for _, c := range idle {
		c.timer.Stop()
		c.proc.retire()
	}
}

// ended counts a child that ended.
func (t *Turns) ended() {
	t.mu.Lock()
	t.live--
	t.signalLocked()
	t.mu.Unlock()
}

// signalLocked wakes the Starts waiting for a child.
func (t *Turns) signalLocked() {
	close(t.changed)
	t.changed = make(chan struct{})
}

// explain returns err as the work's own error when a limit or the
// caller's context ended the work, whose time was budget.
func (t *Turns) explain(err error, budget time.Duration) error {
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("%w: %w", t.errs.Timeout, context.DeadlineExceeded)
	case errors.Is(err, context.Canceled):
		return fmt.Errorf("%w: %w", t.errs.Timeout, context.Canceled)
	case errors.Is(err, ErrTime):
		return fmt.Errorf("%w: it took longer than %s", t.errs.Timeout, budget)
	case errors.Is(err, ErrMemory):
		return fmt.Errorf("%w (%d MiB)", t.errs.Memory, t.limits.Memory>>20)
	case errors.Is(err, ErrOutput):
		return fmt.Errorf("%w (%d MiB)", t.errs.Output, t.limits.Output>>20)
	}
	return err
}
