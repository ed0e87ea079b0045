package reconcile

import (
	"math"
	"math/rand/v2"
	"time"
)

// Result is the outcome of one reconcile step.
type Result int

const (
	// ResultEmpty means the step has nothing to say about the outcome.
	ResultEmpty Result = iota
	// ResultRequeue asks for another run soon, without it being a failure.
	ResultRequeue
	// ResultSuccess means the step reached the desired state.
	ResultSuccess
)

// LowestRequeuingResult returns the result that asks for the earliest rerun.
func LowestRequeuingResult(a, b Result) Result {
	switch {
	case a == ResultEmpty:
		return b
	case b == ResultEmpty:
		return a
	case a == ResultRequeue || b == ResultRequeue:
		return ResultRequeue
	}
	return ResultSuccess
}

// DefaultJitterPercent is the default spread of requeue intervals, so that
// objects created together do not reconcile together forever.
const DefaultJitterPercent = 5

// Jitter returns d moved by a random amount of at most percent per cent
// either way.
func Jitter(d time.Duration, percent int) time.Duration {
	if d <= 0 || percent <= 0 {
		return d
	}
	spread := int64(d) / 100 * int64(percent) // no overflow for the longest durations
	if spread <= 0 {
		return d
	}
	j := time.Duration(rand.Int64N(2*spread+1) - spread)
	if j > 0 && d > math.MaxInt64-j {
		j = -j // past the longest duration: spread the other way
	}
	return d + j
}
