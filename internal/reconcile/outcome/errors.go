package outcome

import (
	"errors"
	"time"
)

// Stalling is a failure that no retry can mend: the spec is invalid, or a
// referenced object is unusable as it is. The object is marked Stalled and is
// not requeued until it changes.
type Stalling struct {
	// Reason is the condition reason, in UpperCamelCase.
	Reason string
	// Err is the cause, shown to users in conditions and events.
	Err error
}

func (e *Stalling) Error() string { return e.Err.Error() }

// Unwrap returns the cause.
func (e *Stalling) Unwrap() error { return e.Err }

// Waiting is an expected wait for something outside the object, such as a
// dependency that is not ready: not a failure of the controller. The object
// is requeued after RequeueAfter, without backoff.
type Waiting struct {
	// Reason is the condition reason, in UpperCamelCase.
	Reason string
	// Err says what the object waits for.
	Err error
	// RequeueAfter is when to look again.
	RequeueAfter time.Duration
	// Quiet means that what the object waits for is itself under way (a
	// source fetching its first artifact), so that the wait is likely
	// over before users would look: the first such run of an object that
	// has no status yet writes none (the runner decides), and the next
	// run, when the wait ends or after RequeueAfter, writes it.
	Quiet bool
	// KeepsStatus, with Quiet, means that the object's status stays true
	// while it waits, whatever it says: what it waits for is this
	// process catching up (an artifact stored again here after the
	// replica that stored it went), not news about the object. The
	// first such run writes no status even when the object has one.
	KeepsStatus bool
}

func (e *Waiting) Error() string { return e.Err.Error() }

// Unwrap returns the cause.
func (e *Waiting) Unwrap() error { return e.Err }

// Progressing is work under way that the object itself started, such as
// applied objects becoming healthy: not a failure, and not finished. The
// object is Ready=Unknown and Reconciling=True, and is looked at again after
// RequeueAfter, without holding a worker meanwhile.
type Progressing struct {
	// Reason is the condition reason, in UpperCamelCase.
	Reason string
	// Err says what is under way.
	Err error
	// RequeueAfter is when to look again.
	RequeueAfter time.Duration
	// Quiet means the status need not say so: the work is young and the
	// next look, after RequeueAfter, comes before users would notice. The
	// run then writes no status of its own, and the next one writes it,
	// often as finished.
	Quiet bool
}

func (e *Progressing) Error() string { return e.Err.Error() }

// Unwrap returns the cause.
func (e *Progressing) Unwrap() error { return e.Err }

// Holding is a run that did nothing on purpose: a gate (spec.gates) holds
// the object back. The step that holds has written its own condition
// (Approved, Blocked); Ready, Stalled and the observed generation keep
// describing the last run that did work, and the object is looked at again
// after RequeueAfter (or when the gate opens).
type Holding struct {
	// Reason is the reason of the holding condition, in UpperCamelCase.
	Reason string
	// Err says what holds the object back.
	Err error
	// RequeueAfter is when to look again.
	RequeueAfter time.Duration
	// Restored means the run, though held, restored what the hold keeps
	// serving (an artifact lost from storage, rebuilt at the held
	// revision): Summarize then writes Ready as for a success, so that it
	// no longer tells of a failure the run mended.
	Restored bool
}

func (e *Holding) Error() string { return e.Err.Error() }

// Unwrap returns the cause.
func (e *Holding) Unwrap() error { return e.Err }

// IsHolding reports whether err is a Holding error.
func IsHolding(err error) bool {
	var h *Holding
	return errors.As(err, &h)
}

// MarkRestored marks the Holding error err, if it is one, as a hold whose
// run restored what it serves (see Holding.Restored), and returns it.
func MarkRestored(err error) error {
	var h *Holding
	if errors.As(err, &h) {
		h.Restored = true
	}
	return err
}

// Hold returns a Holding error.
func Hold(reason string, err error, after time.Duration) error {
	return &Holding{Reason: reason, Err: err, RequeueAfter: after}
}

// WaitingReason is the reason of a wait that gives none of its own.
const WaitingReason = "Waiting"

// Failure is a failure that a retry may mend, such as a host that is down. It
// is retried with exponential backoff, or after RetryAfter when that is set.
type Failure struct {
	// Reason is the condition reason, in UpperCamelCase.
	Reason string
	// Err is the cause, shown to users in conditions and events.
	Err error
	// RetryAfter, when positive, is the fixed delay before the retry (a
	// retry strategy the user chose), instead of the backoff.
	RetryAfter time.Duration
}

func (e *Failure) Error() string { return e.Err.Error() }

// Unwrap returns the cause.
func (e *Failure) Unwrap() error { return e.Err }

// Stall returns a Stalling error.
func Stall(reason string, err error) error { return &Stalling{Reason: reason, Err: err} }

// Wait returns a Waiting error.
func Wait(reason string, err error, after time.Duration) error {
	return &Waiting{Reason: reason, Err: err, RequeueAfter: after}
}

// WaitQuietly returns a quiet Waiting error (see Waiting.Quiet).
func WaitQuietly(reason string, err error, after time.Duration) error {
	return &Waiting{Reason: reason, Err: err, RequeueAfter: after, Quiet: true}
}

// WaitKeepingStatus returns a quiet Waiting error that keeps the status
// the object has (see Waiting.KeepsStatus).
func WaitKeepingStatus(reason string, err error, after time.Duration) error {
	return &Waiting{Reason: reason, Err: err, RequeueAfter: after, Quiet: true, KeepsStatus: true}
}

// QuietWait returns the quiet Waiting error in err, or nil.
func QuietWait(err error) *Waiting {
	var w *Waiting
	if errors.As(err, &w) && w.Quiet {
		return w
	}
	return nil
}

// Progress returns a Progressing error.
func Progress(reason string, err error, after time.Duration) error {
	return &Progressing{Reason: reason, Err: err, RequeueAfter: after}
}

// ProgressQuietly returns a quiet Progressing error (see Progressing.Quiet).
func ProgressQuietly(reason string, err error, after time.Duration) error {
	return &Progressing{Reason: reason, Err: err, RequeueAfter: after, Quiet: true}
}

// IsQuiet reports whether err is a quiet Progressing error: one whose run
// need not write its status.
func IsQuiet(err error) bool {
	var p *Progressing
	return errors.As(err, &p) && p.Quiet
}

// Fail returns a Failure error.
func Fail(reason string, err error) error { return &Failure{Reason: reason, Err: err} }

// FailRetryAfter returns a Failure error retried after the fixed delay
// after, without backoff.
func FailRetryAfter(reason string, err error, after time.Duration) error {
	return &Failure{Reason: reason, Err: err, RetryAfter: after}
}

// ReasonOf returns the reason carried by err, or fallback when err carries
// none.
func ReasonOf(err error, fallback string) string {
	var (
		s *Stalling
		w *Waiting
		p *Progressing
		h *Holding
		f *Failure
	)
	switch {
	case errors.As(err, &h) && h.Reason != "":
		return h.Reason
	case errors.As(err, &s) && s.Reason != "":
		return s.Reason
	case errors.As(err, &w) && w.Reason != "":
		return w.Reason
	case errors.As(err, &p) && p.Reason != "":
		return p.Reason
	case errors.As(err, &f) && f.Reason != "":
		return f.Reason
	}
	return fallback
}
