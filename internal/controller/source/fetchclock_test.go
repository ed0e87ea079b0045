package source

import (
	"errors"
	"testing"

	. "github.com/onsi/gomega"
	promtest "github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/windlass-dev/windlass/internal/metrics"
	"github.com/windlass-dev/windlass/internal/testutil"
)

// fetchCounts is what the fetch metrics of one kind say at one time. The
// metrics are the process's, shared by every test of the package: the
// stories compare two readings and expect an increase, never a value.
type fetchCounts struct {
	success, failure float64
	// samples counts the durations observed.
	samples uint64
}

// fetchesOf reads the fetch metrics of kind.
func fetchesOf(kind string) fetchCounts {
	return fetchCounts{
		success: promtest.ToFloat64(metrics.SourceFetches.WithLabelValues(kind, metrics.ResultSuccess)),
		failure: promtest.ToFloat64(metrics.SourceFetches.WithLabelValues(kind, metrics.ResultFailure)),
		samples: testutil.SampleCount(metrics.SourceFetchDuration.WithLabelValues(kind)),
	}
}

// expectFetched checks that fetches of kind with result (metrics.Result*)
// were recorded since before, with their durations.
func expectFetched(g *WithT, kind string, before fetchCounts, result string) {
	now := fetchesOf(kind)
	count, was := now.success, before.success
	if result == metrics.ResultFailure {
		count, was = now.failure, before.failure
	}
	g.ExpectWithOffset(1, count).To(BeNumerically(">", was), "a %s fetch of a %s is counted", result, kind)
	g.ExpectWithOffset(1, now.samples).To(BeNumerically(">", before.samples), "the duration of a %s fetch is observed", kind)
}

// TestFetchClock: a run's fetch is recorded once, when it ends: a failure
// at the first part that fails, a success when the run ends after parts
// that all succeeded; a run that fetched nothing records nothing. Each
// case has a kind of its own, so that the counts are exact.
func TestFetchClock(t *testing.T) {
	failed := errors.New("upstream down")
	tests := []struct {
		name  string
		parts []error
		want  fetchCounts
	}{
		{name: "nothing asked", want: fetchCounts{}},
		{name: "one part", parts: []error{nil}, want: fetchCounts{success: 1, samples: 1}},
		{name: "two parts, one fetch", parts: []error{nil, nil}, want: fetchCounts{success: 1, samples: 1}},
		{name: "failed part", parts: []error{failed}, want: fetchCounts{failure: 1, samples: 1}},
		{name: "second part failed", parts: []error{nil, failed}, want: fetchCounts{failure: 1, samples: 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			kind := "FetchClockTest/" + tt.name
			c := &fetchClock{kind: kind}
			for _, err := range tt.parts {
				g.Expect(errors.Is(c.time(func() error { return err }), err)).To(BeTrue())
			}
			c.end()
			c.end()
			g.Expect(fetchesOf(kind)).To(Equal(tt.want))
		})
	}
}

// TestTimedReturnsWhatThePartReturns: timed is fetchClock.time for a part
// that returns a value.
func TestTimedReturnsWhatThePartReturns(t *testing.T) {
	g := NewWithT(t)
	kind := "FetchClockTest/timed"
	c := &fetchClock{kind: kind}
	got, err := timed(c, func() (string, error) { return "index", nil })
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got).To(Equal("index"))
	c.end()
	g.Expect(fetchesOf(kind)).To(Equal(fetchCounts{success: 1, samples: 1}))
}
