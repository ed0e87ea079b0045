package health

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Defaults of WaitOptions.
const (
	DefaultTimeout      = 5 * time.Minute
	DefaultPollInterval = 2 * time.Second

	// firstPollInterval is the delay before the second check of a wait.
	firstPollInterval = 100 * time.Millisecond
)

// Errors that a *WaitError matches with errors.Is.
var (
	// ErrTimeout: the objects were not all Current when the timeout passed.
	ErrTimeout = errors.New("health check timed out")
	// ErrFailed: an object Failed and the wait failed fast.
	ErrFailed = errors.New("health check failed")
)

// WaitOptions configures Wait.
type WaitOptions struct {
	// Timeout bounds the wait; zero means DefaultTimeout.
	Timeout time.Duration
	// PollInterval is the longest time between two checks; zero means
	// DefaultPollInterval. The first checks come sooner (from
	// firstPollInterval, doubling), since most objects become ready within
	// a second of being applied.
	PollInterval time.Duration
	// FailFast ends the wait as soon as an object is Failed. Without it a
	// Failed object is waited for like any other, until the timeout.
	FailFast bool
	// Exprs are custom health expressions (healthCheckExprs).
	Exprs []Expr
}

// WaitError reports a wait that ended with objects not ready. It matches
// ErrTimeout or ErrFailed with errors.Is.
type WaitError struct {
	// Err is ErrTimeout or ErrFailed.
	Err error
	// Timeout is the wait's timeout.
	Timeout time.Duration
	// Objects are the objects that were not Current at the last check (on
	// timeout), or those that Failed (when failing fast).
	Objects []ObjectStatus
	// LastErr is the error of the last check, when it could not read the
	// objects; Objects are then from the check before.
	LastErr error
}

// Error lists each object that is not ready with its status and message.
func (e *WaitError) Error() string {
	var b strings.Builder
	if errors.Is(e.Err, ErrFailed) {
		b.WriteString(ErrFailed.Error())
	} else {
		fmt.Fprintf(&b, "%s after %s", ErrTimeout, e.Timeout)
	}
	if len(e.Objects) > 0 {
		b.WriteString(": ")
		for i, s := range e.Objects {
			if i > 0 {
				b.WriteString("; ")
			}
			b.WriteString(s.String())
		}
	}
	if e.LastErr != nil {
		fmt.Fprintf(&b, " (last check: %v)", e.LastErr)
	}
	return b.String()
}

// Unwrap returns Err and LastErr.
func (e *WaitError) Unwrap() []error {
	if e.LastErr != nil {
		return []error{e.Err, e.LastErr}
	}
	return []error{e.Err}
}

// Wait checks the objects until all are Current and returns nil then. It
// returns a *WaitError when the timeout passes (listing every object that
// is not Current), or when an object is Failed and opts.FailFast is set
// (listing the Failed objects). An error reading the objects does not end
// the wait: it is retried at the next poll, and reported with the timeout.
// When ctx ends Wait returns at once with an error that wraps ctx.Err()
// (context.Canceled when the caller abandons the check for a new
// revision). An invalid expression (an *ExprError) or a reference without
// a valid apiVersion, kind or name is reported before any check.
func (c *Checker) Wait(ctx context.Context, refs []ObjectRef, opts WaitOptions) error {
	set, err := compileExprs(opts.Exprs)
	if err != nil {
		return err
	}
	timeout := opts.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	interval := opts.PollInterval
	if interval <= 0 {
		interval = DefaultPollInterval
	}
	if err := ctx.Err(); err != nil {
		return canceled(ctx)
	}
	if len(refs) == 0 {
		return nil
	}
	for _, ref := range refs {
		if _, err := ref.validate(); err != nil {
			return err
		}
	}

	waitCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	next := min(firstPollInterval, interval)
	timer := time.NewTimer(next)
	defer timer.Stop()

	var last Result
	var lastErr error
	for {
		res, err := c.check(waitCtx, refs, set)
		switch {
		case ctx.Err() != nil:
			return canceled(ctx)
		case waitCtx.Err() != nil:
			// The timeout passed during the check: keep the previous result.
		case err != nil:
			lastErr = err
		default:
			last, lastErr = res, nil
			if last.AllCurrent() {
				return nil
			}
			if opts.FailFast {
				if failed := last.Failed(); len(failed) > 0 {
					return &WaitError{Err: ErrFailed, Timeout: timeout, Objects: failed}
				}
			}
		}

		select {
		case <-ctx.Done():
			return canceled(ctx)
		case <-waitCtx.Done():
			return timedOut(timeout, refs, last, lastErr)
		case <-timer.C:
			next = min(2*next, interval)
			timer.Reset(next)
		}
	}
}

func canceled(ctx context.Context) error {
	err := ctx.Err()
	if cause := context.Cause(ctx); cause != nil && !errors.Is(cause, err) {
		return fmt.Errorf("health check canceled: %w (%w)", err, cause)
	}
	return fmt.Errorf("health check canceled: %w", err)
}

func timedOut(timeout time.Duration, refs []ObjectRef, last Result, lastErr error) error {
	objects := last.NotReady()
	if last == nil {
		for _, ref := range refs {
			objects = append(objects, ObjectStatus{Ref: ref, Status: InProgress, Message: "not checked before the timeout"})
		}
	}
	return &WaitError{Err: ErrTimeout, Timeout: timeout, Objects: objects, LastErr: lastErr}
}
