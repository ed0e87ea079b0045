package ui

import (
	"fmt"
	"time"

	"github.com/windlass-dev/windlass/internal/reconcile/gate"
)

// The timeline's drawing, in the SVG's units.
const (
	timelineWidth = 700.0
	// barHeight is the height of the bar of states; the day labels are
	// below it.
	barHeight = 18.0
)

// timeline is a gate's week ahead, drawn: a bar per span of one state and
// a tick per day.
type timeline struct {
	Bars  []bar
	Ticks []tick
	// Summary says the week in words, for those who do not see the bars.
	Summary string
}

// bar is one span of a timeline.
type bar struct {
	X, Width float64
	Open     bool
	// Title says the span in words (the bar's tooltip).
	Title string
}

// tick marks the start of a day (UTC).
type tick struct {
	X     float64
	Label string
}

// timelineOf draws spans, which start at now and cover a week.
func timelineOf(spans []gate.Span, now time.Time) timeline {
	var t timeline
	opened, closed := 0, 0
	for _, s := range spans {
		state := "closed"
		if s.Open {
			state = "open"
			opened++
		} else {
			closed++
		}
		x := xOf(s.From, now)
		t.Bars = append(t.Bars, bar{X: x, Width: max(xOf(s.To, now)-x, 0.5), Open: s.Open,
			Title: fmt.Sprintf("%s from %s to %s (%s)", state, stampOf(s.From), stampOf(s.To), s.Cause)})
	}
	for day := now.UTC().Truncate(24 * time.Hour).Add(24 * time.Hour); day.Before(now.Add(week)); day = day.Add(24 * time.Hour) {
		t.Ticks = append(t.Ticks, tick{X: xOf(day, now), Label: day.Format("Mon 2")})
	}
	t.Summary = summaryOf(spans, opened, closed)
	return t
}

// summaryOf says a week of spans in words.
func summaryOf(spans []gate.Span, opened, closed int) string {
	switch {
	case len(spans) == 0:
		return ""
	case len(spans) == 1 && spans[0].Open:
		return "Open all week."
	case len(spans) == 1:
		return "Closed all week."
	}
	next := spans[1]
	state := "Closes"
	if next.Open {
		state = "Opens"
	}
	return fmt.Sprintf("%s at %s; %d open and %d closed stretches this week.", state, stampOf(next.From), opened, closed)
}

// xOf places t on a timeline that starts at now.
func xOf(t, now time.Time) float64 {
	return float64(t.Sub(now)) / float64(week) * timelineWidth
}

// stampOf formats t for a page: UTC, to the minute.
func stampOf(t time.Time) string {
	return t.UTC().Format("Mon 2 Jan 15:04 UTC")
}
