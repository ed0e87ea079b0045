package health

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// Errors that a *WaitError matches with errors.Is.
var (
	// ErrTimeout: the objects were not all Current when the timeout passed.
	ErrTimeout = errors.New("health check timed out")
	// ErrFailed: an object Failed and the wait failed fast.
	ErrFailed = errors.New("health check failed")
)

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
