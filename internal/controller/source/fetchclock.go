package source

import (
	"time"

	"github.com/windlass-dev/windlass/internal/metrics"
)

// fetchClock times the fetch of one run of a source, what the run asks
// its upstream for (a clone; a listing or a resolve, then a download; a
// chart pull or build), and records it once in the source metrics
// (metrics.RecordFetch): a failure as soon as a part fails, a success when
// the run ends after parts that all succeeded, an upstream that had
// nothing new included. A run that asks upstream nothing (held by a gate,
// waiting for a source, refused before it reaches out) records nothing.
// Only the parts are timed, not what runs between them (verification,
// packaging into storage).
type fetchClock struct {
	// kind is the source's kind, as the kinds registry spells it.
	kind string
	// elapsed is the time spent in the parts so far.
	elapsed time.Duration
	// started is set once a part ran; recorded once the fetch is.
	started, recorded bool
}

// time runs part, a part of the fetch, adding its duration; a failure ends
// the fetch and is recorded.
func (c *fetchClock) time(part func() error) error {
	start := time.Now()
	err := part()
	c.elapsed += time.Since(start)
	c.started = true
	if err != nil {
		c.record(err)
	}
	return err
}

// end records the fetch as a success when a part ran and none failed: the
// runs of the sources defer it.
func (c *fetchClock) end() {
	if c.started {
		c.record(nil)
	}
}

// record records the fetch, once, as ending with err.
func (c *fetchClock) record(err error) {
	if c.recorded {
		return
	}
	c.recorded = true
	metrics.RecordFetch(c.kind, time.Now().Add(-c.elapsed), err)
}

// timed runs part, a part of the fetch that c times, and returns what it
// returns (see fetchClock.time).
func timed[T any](c *fetchClock, part func() (T, error)) (T, error) {
	var out T
	err := c.time(func() error {
		var err error
		out, err = part()
		return err
	})
	return out, err
}
