package git

import (
	"errors"
	"fmt"
	"sync/atomic"
)

// Default byte limits of a Clone, used where CheckoutOptions leaves a limit
// at zero. A GitOps repository is a few megabytes of manifests: the defaults
// only stop what would exhaust the controller's memory or disk.
const (
	// DefaultMaxTransferBytes bounds what a Clone receives: 1 GiB.
	DefaultMaxTransferBytes int64 = 1 << 30
	// DefaultMaxObjectBytes bounds the uncompressed objects a Clone holds
	// in memory: 2 GiB.
	DefaultMaxObjectBytes int64 = 2 << 30
	// DefaultMaxCheckoutBytes bounds the files a Clone writes: 2 GiB.
	DefaultMaxCheckoutBytes int64 = 2 << 30
)

// Limit names one of the byte limits of a Clone.
type Limit string

// The byte limits of a Clone; see the fields of CheckoutOptions with the
// same names.
const (
	// LimitTransfer is CheckoutOptions.MaxTransferBytes.
	LimitTransfer Limit = "transfer"
	// LimitObjects is CheckoutOptions.MaxObjectBytes.
	LimitObjects Limit = "objects"
	// LimitCheckout is CheckoutOptions.MaxCheckoutBytes.
	LimitCheckout Limit = "checkout"
)

// ErrTooLarge is matched, through errors.Is, by every error reporting a
// Clone stopped at one of its byte limits (a [*TooLargeError]).
var ErrTooLarge = errors.New("repository too large")

// TooLargeError reports a Clone stopped because the repository exceeds one
// of its byte limits. Retrying does not help until the repository shrinks
// or the limit is raised. Its message names the limit and its value only.
type TooLargeError struct {
	// Limit is the limit exceeded.
	Limit Limit
	// Max is the value of the limit, in bytes.
	Max int64
}

// Error implements error. The message names the limit ("transfer",
// "objects" or "checkout"), not the option that sets it, which the caller
// may expose under another name.
func (e *TooLargeError) Error() string {
	return fmt.Sprintf("%v: %s exceeds the %s limit of %s",
		ErrTooLarge, e.Limit.subject(), e.Limit, formatBytes(e.Max))
}

// Is makes errors.Is(err, ErrTooLarge) true.
func (e *TooLargeError) Is(target error) bool {
	return target == ErrTooLarge
}

// subject says what the limit measures.
func (l Limit) subject() string {
	switch l {
	case LimitTransfer:
		return "the data received from the remote"
	case LimitObjects:
		return "the uncompressed size of the fetched objects"
	}
	return "the size of the files checked out"
}

// option is the CheckoutOptions field that sets the limit.
func (l Limit) option() string {
	switch l {
	case LimitTransfer:
		return "MaxTransferBytes"
	case LimitObjects:
		return "MaxObjectBytes"
	}
	return "MaxCheckoutBytes"
}

// formatBytes writes n in the largest binary unit that divides it, or in
// bytes.
func formatBytes(n int64) string {
	for _, u := range []struct {
		shift int
		name  string
	}{{30, "GiB"}, {20, "MiB"}, {10, "KiB"}} {
		if n > 0 && n%(1<<u.shift) == 0 {
			return fmt.Sprintf("%d %s", n>>u.shift, u.name)
		}
	}
	return fmt.Sprintf("%d bytes", n)
}

// validateLimits rejects negative limits.
func validateLimits(opts CheckoutOptions) error {
	for _, l := range []struct {
		limit Limit
		value int64
	}{
		{LimitTransfer, opts.MaxTransferBytes},
		{LimitObjects, opts.MaxObjectBytes},
		{LimitCheckout, opts.MaxCheckoutBytes},
	} {
		if l.value < 0 {
			return &InvalidOptionsError{Reason: fmt.Sprintf("%s must not be negative", l.limit.option())}
		}
	}
	return nil
}

// byteBudget counts bytes against one limit. It is safe for concurrent use;
// a nil budget is unlimited.
type byteBudget struct {
	limit Limit
	max   int64
	used  atomic.Int64
	err   atomic.Pointer[TooLargeError]
}

// newBudget returns a budget of max bytes, or of def when max is zero.
func newBudget(limit Limit, max, def int64) *byteBudget {
	if max == 0 {
		max = def
	}
	return &byteBudget{limit: limit, max: max}
}

// take counts n more bytes and returns a [*TooLargeError] once the total
// exceeds the limit, and on every call after that.
func (b *byteBudget) take(n int64) error {
	if b == nil {
		return nil
	}
	if err := b.exceeded(); err != nil || n <= 0 {
		return err
	}
	for {
		used := b.used.Load()
		if n > b.max-used { // never overflows: used <= max
			b.err.CompareAndSwap(nil, &TooLargeError{Limit: b.limit, Max: b.max})
			return b.err.Load()
		}
		if b.used.CompareAndSwap(used, used+n) {
			return nil
		}
	}
}

// exceeded returns the error of an exhausted budget, or nil.
func (b *byteBudget) exceeded() error {
	if b == nil {
		return nil
	}
	if e := b.err.Load(); e != nil {
		return e
	}
	return nil
}

// cloneLimits are the budgets of one Clone. Each is shared by everything
// the Clone does, submodules included.
type cloneLimits struct {
	// transfer counts the bytes read from network connections.
	transfer *byteBudget
	// packs counts the pack data received, over any transport; it has the
	// limit of transfer and bounds what is buffered in memory even where
	// no connection is counted (the file transport).
	packs *byteBudget
	// objects counts the uncompressed size of the objects fetched.
	objects *byteBudget
	// checkout counts the bytes written to files in the work directory.
	checkout *byteBudget
	// held is what the Clone holds of the process's memory budget, and
	// busy the refusal of that budget, if any (see memory.go).
	held atomic.Int64
	busy atomic.Pointer[BusyError]
}

// newCloneLimits returns the budgets opts asks for, with the defaults for
// the limits it leaves at zero.
func newCloneLimits(opts CheckoutOptions) *cloneLimits {
	return &cloneLimits{
		transfer: newBudget(LimitTransfer, opts.MaxTransferBytes, DefaultMaxTransferBytes),
		packs:    newBudget(LimitTransfer, opts.MaxTransferBytes, DefaultMaxTransferBytes),
		objects:  newBudget(LimitObjects, opts.MaxObjectBytes, DefaultMaxObjectBytes),
		checkout: newBudget(LimitCheckout, opts.MaxCheckoutBytes, DefaultMaxCheckoutBytes),
	}
}

// exceeded returns the error of the first exhausted budget, or nil. A nil
// cloneLimits has none.
func (l *cloneLimits) exceeded() error {
	if l == nil {
		return nil
	}
	for _, b := range []*byteBudget{l.transfer, l.packs, l.objects, l.checkout} {
		if err := b.exceeded(); err != nil {
			return err
		}
	}
	if busy := l.busy.Load(); busy != nil {
		return busy
	}
	return nil
}
