package isolate

import (
	"context"
	"errors"
	"fmt"
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

// Turns starts the children of one kind of work: at most
// Limits.Concurrency at once, with their memory from a Pool.
type Turns struct {
	role   string
	limits Limits
	errs   Errors
	slots  chan struct{}
	pool   *Pool
}

// NewTurns returns the Turns of the children of role, bounded by limits
// (whose fields must be set), their limits told with errs, and their
// memory taken from pool, which other work may share; nil stands for a
// pool of their own, of limits.MemoryAtOnce.
func NewTurns(role string, limits Limits, errs Errors, pool *Pool) *Turns {
	if pool == nil {
		pool = NewPool(limits.MemoryAtOnce())
	}
	return &Turns{role: role, limits: limits, errs: errs, slots: make(chan struct{}, limits.Concurrency), pool: pool}
}

// Limits returns the limits of t's children.
func (t *Turns) Limits() Limits { return t.limits }

// Start waits for a turn until ctx ends, then starts a child whose work
// may take budget (Limits.Time when zero or longer). The child's turn
// ends with its End, whose errors, like Start's, are the work's own.
func (t *Turns) Start(ctx context.Context, budget time.Duration) (*Process, error) {
	if budget <= 0 || budget > t.limits.Time {
		budget = t.limits.Time
	}
	select {
	case t.slots <- struct{}{}:
	case <-ctx.Done():
		return nil, t.explain(fmt.Errorf("waiting for a turn: %w", ctx.Err()), budget)
	}
	proc, err := t.pool.Start(ctx, Job{Role: t.role, Memory: t.limits.Memory, Output: t.limits.Output, Time: budget})
	if err != nil {
		<-t.slots
		return nil, t.explain(err, budget)
	}
	release := proc.release
	proc.release = func() {
		release()
		<-t.slots
	}
	proc.explain = func(err error) error { return t.explain(err, budget) }
	return proc, nil
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
