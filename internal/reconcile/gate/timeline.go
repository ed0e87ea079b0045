package gate

import (
	"time"

	gatingv1alpha1 "github.com/windlass-dev/windlass/api/gating/v1alpha1"
)

// Span is a stretch of time in which a gate keeps one state.
type Span struct {
	From, To time.Time
	Open     bool
	// Cause is what decides the state in the span.
	Cause Cause
}

// MaxSpans bounds the spans of a timeline: a schedule that starts every
// minute would otherwise make thousands in a week. The last span then
// reaches the end of the timeline with the state at its start.
const MaxSpans = 500

// Timeline returns the states of g from from to to, as its requests and
// schedules decide them now (requests made later are not foreseen). An
// invalid spec is a *SpecError: the gate stays closed until it is fixed.
func Timeline(g *gatingv1alpha1.Gate, from, to time.Time) ([]Span, error) {
	c, _, err := compile(g)
	if err != nil {
		return []Span{{From: from, To: to, Cause: CauseInvalid}}, err
	}
	var out []Span
	for t := from; t.Before(to); {
		s := c.stateAt(t)
		end := to
		if next := c.nextTransition(t, s.open); next != nil && next.Before(to) && len(out) < MaxSpans-1 {
			end = *next
		}
		out = append(out, Span{From: t, To: end, Open: s.open, Cause: s.cause})
		t = end
	}
	return out, nil
}
