// Package gate decides the state of a Gate (gating.toolkit.fluxcd.io) at a
// given time, free of any controller plumbing: from its default, its
// window, the open and close requests in its annotations and its recurring
// schedules, in the order of the specification (a request in force, then
// the schedules, then the default), and when the state will next change by
// itself. Schedules are evaluated in their time zone, so that
// daylight-saving changes are right.
package gate

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	// The zone database is built in, so that time zones resolve in an
	// image without /usr/share/zoneinfo.
	_ "time/tzdata"

	"github.com/robfig/cron/v3"

	gatingv1alpha1 "github.com/windlass-dev/windlass/api/gating/v1alpha1"
)

// Cause is what decided a gate's state.
type Cause string

// The causes, in the order they are considered.
const (
	CauseRequest  Cause = "request"
	CauseSchedule Cause = "schedule"
	CauseDefault  Cause = "default"
	// CauseInvalid: the spec is invalid, and the gate is closed.
	CauseInvalid Cause = "invalid"
)

// Decision is the state of a gate at a time, and why.
type Decision struct {
	// Open is whether the gate lets changes through.
	Open bool
	// Cause is what decided, and Because says it for people: the request
	// with its time, the schedule with its cron and zone, or the default.
	Cause   Cause
	Because string
	// Message is the Opened condition's message.
	Message string
	// RequestedAt and ResetToDefaultAt are the time of the request in
	// force and when it lapses; nil without one.
	RequestedAt, ResetToDefaultAt *time.Time
	// NextTransition is the next time the state changes by itself; nil
	// when it never does (within a year).
	NextTransition *time.Time
}

// Problem is something wrong with a gate that does not stop it from being
// decided: a request that cannot be parsed, which is ignored.
type Problem struct {
	Reason, Message string
}

// SpecError is an invalid spec: the gate is closed until it is fixed.
type SpecError struct {
	Reason string
	Err    error
}

func (e *SpecError) Error() string { return e.Err.Error() }

func (e *SpecError) Unwrap() error { return e.Err }

// horizon bounds the search for the next transition.
const horizon = 366 * 24 * time.Hour

// maxSteps bounds the boundaries visited in that search.
const maxSteps = 1000

// Evaluate decides the state of g at now. Requests that cannot be parsed
// are returned as problems and ignored; an invalid spec is a *SpecError and
// a closed decision, never an open one.
func Evaluate(g *gatingv1alpha1.Gate, now time.Time) (Decision, []Problem, error) {
	c, problems, err := compile(g)
	if err != nil {
		return Decision{Open: false, Cause: CauseInvalid, Because: "its spec is invalid",
			Message: "Gate closed: " + err.Error()}, problems, err
	}
	return c.decide(now), problems, nil
}

// request is a valid open or close request.
type request struct {
	open bool
	at   time.Time
	// reason is why it was made, when its reason annotation says.
	reason string
}

// schedule is a compiled recurring window.
type schedule struct {
	open  bool
	cron  cron.Schedule
	every time.Duration
	loc   *time.Location
	spec  gatingv1alpha1.GateSchedule
}

// compiled is a gate ready to be evaluated at any time.
type compiled struct {
	defaultOpen bool
	window      time.Duration
	requests    []request
	schedules   []schedule
}

// cronParser reads the five fields of cron(8) and the @descriptors.
var cronParser = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// compile checks and parses the spec and the annotations of g.
func compile(g *gatingv1alpha1.Gate) (compiled, []Problem, error) {
	c := compiled{defaultOpen: g.Spec.Default == gatingv1alpha1.GateOpened, window: g.GetWindow()}
	var problems []Problem
	for _, a := range []struct {
		key, reasonKey string
		open           bool
	}{{gatingv1alpha1.OpenRequestAnnotation, gatingv1alpha1.OpenReasonAnnotation, true},
		{gatingv1alpha1.CloseRequestAnnotation, gatingv1alpha1.CloseReasonAnnotation, false}} {
		value, ok := g.GetAnnotations()[a.key]
		if !ok {
			continue
		}
		at, err := time.Parse(time.RFC3339, strings.TrimSpace(value))
		if err != nil {
			problems = append(problems, Problem{Reason: gatingv1alpha1.InvalidRequestReason, Message: fmt.Sprintf(
				"annotation %s: %q is not an RFC 3339 time such as 2026-03-26T10:00:00Z; the request is ignored", a.key, value)})
			continue
		}
		c.requests = append(c.requests, request{open: a.open, at: at, reason: reasonOf(g.GetAnnotations()[a.reasonKey])})
	}
	// The later request wins; at the same time, the last one the command
	// line or the UI made (LastRequestAnnotation), else closing.
	lastOpened := g.GetAnnotations()[gatingv1alpha1.LastRequestAnnotation] == "open"
	slices.SortStableFunc(c.requests, func(a, b request) int {
		if d := a.at.Compare(b.at); d != 0 {
			return d
		}
		if a.open == b.open {
			return 0
		}
		if a.open != lastOpened {
			return -1
		}
		return 1
	})
	if c.window <= 0 {
		return c, problems, &SpecError{Reason: gatingv1alpha1.InvalidWindowReason,
			Err: fmt.Errorf("spec.window must be a positive duration, not %s", c.window)}
	}
	for i, s := range g.Spec.Schedules {
		compiledSchedule, err := compileSchedule(s)
		if err != nil {
			return c, problems, &SpecError{Reason: gatingv1alpha1.InvalidScheduleReason, Err: fmt.Errorf("spec.schedules[%d]: %w", i, err)}
		}
		c.schedules = append(c.schedules, compiledSchedule)
	}
	return c, problems, nil
}

// compileSchedule checks and parses one schedule.
func compileSchedule(s gatingv1alpha1.GateSchedule) (schedule, error) {
	out := schedule{open: s.Action == gatingv1alpha1.ScheduleOpen, every: s.Duration.Duration, loc: time.UTC, spec: s}
	if s.Action != gatingv1alpha1.ScheduleOpen && s.Action != gatingv1alpha1.ScheduleClose {
		return out, fmt.Errorf("action %q: choose open or close", s.Action)
	}
	if out.every <= 0 {
		return out, fmt.Errorf("duration must be positive, not %s", s.Duration.Duration)
	}
	if s.TimeZone != "" {
		loc, err := time.LoadLocation(s.TimeZone)
		if err != nil || s.TimeZone == "Local" {
			return out, fmt.Errorf("timeZone %q is not an IANA time zone such as Europe/Berlin", s.TimeZone)
		}
		out.loc = loc
	}
	if strings.HasPrefix(s.Cron, "TZ=") || strings.HasPrefix(s.Cron, "CRON_TZ=") {
		return out, errors.New("cron must not name a zone: set timeZone instead")
	}
	sched, err := cronParser.Parse(s.Cron)
	if err != nil {
		return out, fmt.Errorf("cron %q: %w", s.Cron, err)
	}
	out.cron = sched
	return out, nil
}

// state is the state at a time and its cause.
type state struct {
	open    bool
	cause   Cause
	request *request
	// schedule is the deciding schedule.
	schedule *schedule
}

// stateAt decides the state at t: a request in force, else the active
// schedules (closing wins), else the default.
func (c compiled) stateAt(t time.Time) state {
	if r := c.requestAt(t); r != nil {
		return state{open: r.open, cause: CauseRequest, request: r}
	}
	var deciding *schedule
	for i := range c.schedules {
		s := &c.schedules[i]
		if active, _ := s.activeAt(t); active && (deciding == nil || (deciding.open && !s.open)) {
			deciding = s
		}
	}
	if deciding != nil {
		return state{open: deciding.open, cause: CauseSchedule, schedule: deciding}
	}
	return state{open: c.defaultOpen, cause: CauseDefault}
}

// requestAt returns the request in force at t: the latest whose time has
// come, unless its window has lapsed.
func (c compiled) requestAt(t time.Time) *request {
	for i := len(c.requests) - 1; i >= 0; i-- {
		r := &c.requests[i]
		if r.at.After(t) {
			continue // planned
		}
		if t.Before(r.at.Add(c.window)) {
			return r
		}
		return nil
	}
	return nil
}

// activeAt reports whether the schedule is active at t, and until when
// (windows that overlap or touch are one). A window that keeps being
// extended (every minute for a day, say) is followed a window at a time,
// not a start at a time, and no further than the horizon.
func (s *schedule) activeAt(t time.Time) (bool, time.Time) {
	local := t.In(s.loc)
	start := s.cron.Next(local.Add(-s.every))
	if start.IsZero() || start.After(local) {
		return false, time.Time{}
	}
	end := start.Add(s.every)
	for i := 0; i < maxSteps && end.Sub(local) <= horizon; i++ {
		last := s.lastStartBy(end, start)
		if !last.After(start) {
			break
		}
		start, end = last, last.Add(s.every)
	}
	return true, end
}

// lastStartBy returns the latest start of the schedule in (after, by], or
// after when there is none. Starts fall on whole minutes, so a start in
// the minute up to by is the latest; else it searches by halving:
// cron.Next(x) is the first start after x, so it is at most by exactly
// for the x before that latest start.
func (s *schedule) lastStartBy(by, after time.Time) time.Time {
	if last := s.cron.Next(by.Add(-time.Minute)); !last.IsZero() && !last.After(by) && last.After(after) {
		return last
	}
	if first := s.cron.Next(after); first.IsZero() || first.After(by) {
		return after
	}
	lo, hi := after, by
	for hi.Sub(lo) > time.Second {
		mid := lo.Add(hi.Sub(lo) / 2)
		if next := s.cron.Next(mid); !next.IsZero() && !next.After(by) {
			lo = mid
		} else {
			hi = mid
		}
	}
	return s.cron.Next(lo)
}

// boundariesAfter returns the times after t at which the state may change:
// a planned request, a request lapsing, a schedule starting or ending.
func (c compiled) boundariesAfter(t time.Time) []time.Time {
	var out []time.Time
	add := func(b time.Time) {
		if !b.IsZero() && b.After(t) {
			out = append(out, b)
		}
	}
	for _, r := range c.requests {
		add(r.at)
		add(r.at.Add(c.window))
	}
	for i := range c.schedules {
		s := &c.schedules[i]
		// While a schedule is active, its own starts change nothing: its
		// end is the boundary, and the starts after it come into view from
		// there.
		if active, end := s.activeAt(t); active {
			add(end)
		} else {
			add(s.cron.Next(t.In(s.loc)))
		}
	}
	return out
}

// nextTransition returns the first time after now at which the state
// differs from the state at now, within the horizon.
func (c compiled) nextTransition(now time.Time, open bool) *time.Time {
	t := now
	for range maxSteps {
		candidates := c.boundariesAfter(t)
		if len(candidates) == 0 {
			return nil
		}
		next := slices.MinFunc(candidates, func(a, b time.Time) int { return a.Compare(b) })
		if next.Sub(now) > horizon {
			return nil
		}
		if c.stateAt(next).open != open {
			next = next.UTC()
			return &next
		}
		t = next
	}
	return nil
}

// decide returns the decision at now.
func (c compiled) decide(now time.Time) Decision {
	s := c.stateAt(now)
	d := Decision{Open: s.open, Cause: s.cause, NextTransition: c.nextTransition(now, s.open)}
	verb, opposite := "closed", "opening"
	if s.open {
		verb, opposite = "opened", "closing"
	}
	scheduled := ""
	if d.NextTransition != nil {
		scheduled = fmt.Sprintf("scheduled for %s at %s", opposite, stamp(*d.NextTransition))
	}
	switch s.cause {
	case CauseRequest:
		at, reset := s.request.at.UTC(), s.request.at.Add(c.window).UTC()
		d.RequestedAt, d.ResetToDefaultAt = &at, &reset
		action := "close"
		if s.open {
			action = "open"
		}
		d.Because = fmt.Sprintf("the %s request of %s", action, stamp(at))
		d.Message = "Gate " + action + " requested"
		if scheduled != "" {
			d.Message = "Gate " + scheduled
		}
		if r := s.request.reason; r != "" {
			d.Message += "; reason: " + r
		}
	case CauseSchedule:
		zone := s.schedule.spec.TimeZone
		if zone == "" {
			zone = "UTC"
		}
		d.Because = fmt.Sprintf("the schedule '%s' (%s)", s.schedule.spec.Cron, zone)
		d.Message = fmt.Sprintf("Gate %s by schedule '%s' (%s)", verb, s.schedule.spec.Cron, zone)
		if scheduled != "" {
			d.Message += ", " + scheduled
		}
	default:
		d.Because = "its default"
		d.Message = "Gate " + verb + " by default"
		if scheduled != "" {
			d.Message += ", " + scheduled
		}
	}
	return d
}

// MaxReasonLength bounds the reason of a request, in characters: a longer
// one is cut, so that a condition's message stays short.
const MaxReasonLength = 200

// reasonOf returns the reason of a request as its annotation holds it: on
// one line, at most MaxReasonLength characters.
func reasonOf(annotation string) string {
	r := []rune(strings.Join(strings.Fields(annotation), " "))
	if len(r) > MaxReasonLength {
		return string(r[:MaxReasonLength-1]) + "…"
	}
	return string(r)
}

// stamp formats t as RFC 3339 in UTC.
func stamp(t time.Time) string {
	return t.UTC().Format(time.RFC3339)
}
