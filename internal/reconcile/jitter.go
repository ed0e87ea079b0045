package reconcile

import (
	"math"
	"math/rand/v2"
	"time"
)

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
