package gate

import (
	"errors"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"github.com/robfig/cron/v3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	gatingv1alpha1 "github.com/windlass-dev/windlass/api/gating/v1alpha1"
)

// at parses an RFC 3339 time for the tests.
func at(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t
}

// gateOf returns a gate with spec and annotations.
func gateOf(def gatingv1alpha1.GateState, window time.Duration, annotations map[string]string, schedules ...gatingv1alpha1.GateSchedule) *gatingv1alpha1.Gate {
	return &gatingv1alpha1.Gate{
		ObjectMeta: metav1.ObjectMeta{Name: "g", Namespace: "flux-system", Annotations: annotations},
		Spec: gatingv1alpha1.GateSpec{Default: def, Window: &metav1.Duration{Duration: window},
			Interval: &metav1.Duration{Duration: 30 * time.Second}, Schedules: schedules},
	}
}

func opens(t string) map[string]string {
	return map[string]string{gatingv1alpha1.OpenRequestAnnotation: t}
}

func closes(t string) map[string]string {
	return map[string]string{gatingv1alpha1.CloseRequestAnnotation: t}
}

func both(open, close string) map[string]string {
	return map[string]string{gatingv1alpha1.OpenRequestAnnotation: open, gatingv1alpha1.CloseRequestAnnotation: close}
}

// lastRequest adds the annotation that names the action of the last
// request made to annotations.
func lastRequest(action string, annotations map[string]string) map[string]string {
	annotations[gatingv1alpha1.LastRequestAnnotation] = action
	return annotations
}

// noDeployFriday closes from Friday 00:00 for 24 hours, in Berlin.
var noDeployFriday = gatingv1alpha1.GateSchedule{Action: gatingv1alpha1.ScheduleClose, Cron: "0 0 * * FRI",
	Duration: metav1.Duration{Duration: 24 * time.Hour}, TimeZone: "Europe/Berlin"}

// TestEvaluate walks the RFC's stories and the schedules through the
// decision order, with the clock given.
func TestEvaluate(t *testing.T) {
	morning := gatingv1alpha1.GateSchedule{Action: gatingv1alpha1.ScheduleClose, Cron: "0 9 * * *",
		Duration: metav1.Duration{Duration: time.Hour}, TimeZone: "Europe/Berlin"}
	tests := []struct {
		name        string
		gate        *gatingv1alpha1.Gate
		now         string
		open        bool
		cause       Cause
		message     string
		requestedAt string
		resetAt     string
		next        string
	}{
		{name: "story 1: closed by default", gate: gateOf(gatingv1alpha1.GateClosed, time.Hour, nil),
			now: "2021-03-26T10:09:26Z", cause: CauseDefault, message: "Gate closed by default"},
		{name: "story 1: opened for the window", gate: gateOf(gatingv1alpha1.GateClosed, time.Hour, opens("2021-03-26T10:00:00Z")),
			now: "2021-03-26T10:05:00Z", open: true, cause: CauseRequest, message: "Gate scheduled for closing at 2021-03-26T11:00:00Z",
			requestedAt: "2021-03-26T10:00:00Z", resetAt: "2021-03-26T11:00:00Z", next: "2021-03-26T11:00:00Z"},
		{name: "story 1: closed ahead of the window", gate: gateOf(gatingv1alpha1.GateClosed, time.Hour, both("2021-03-26T10:00:00Z", "2021-03-26T10:10:00Z")),
			now: "2021-03-26T10:15:00Z", cause: CauseRequest, message: "Gate close requested",
			requestedAt: "2021-03-26T10:10:00Z", resetAt: "2021-03-26T11:10:00Z"},
		{name: "story 1: the window lapsed", gate: gateOf(gatingv1alpha1.GateClosed, time.Hour, opens("2021-03-26T10:00:00Z")),
			now: "2021-03-26T11:00:00Z", cause: CauseDefault, message: "Gate closed by default"},
		{name: "story 1 bis: a maintenance window of 24h", gate: gateOf(gatingv1alpha1.GateOpened, 24*time.Hour, closes("2021-03-26T10:00:00Z")),
			now: "2021-03-26T12:00:00Z", cause: CauseRequest, message: "Gate scheduled for opening at 2021-03-27T10:00:00Z",
			requestedAt: "2021-03-26T10:00:00Z", resetAt: "2021-03-27T10:00:00Z", next: "2021-03-27T10:00:00Z"},
		{name: "a planned release", gate: gateOf(gatingv1alpha1.GateClosed, time.Hour, opens("2021-03-26T12:00:00Z")),
			now: "2021-03-26T10:00:00Z", cause: CauseDefault, message: "Gate closed by default, scheduled for opening at 2021-03-26T12:00:00Z",
			next: "2021-03-26T12:00:00Z"},
		{name: "a planned close while an open is in force", gate: gateOf(gatingv1alpha1.GateClosed, time.Hour, both("2021-03-26T10:00:00Z", "2021-03-26T10:30:00Z")),
			now: "2021-03-26T10:15:00Z", open: true, cause: CauseRequest, message: "Gate scheduled for closing at 2021-03-26T10:30:00Z",
			requestedAt: "2021-03-26T10:00:00Z", resetAt: "2021-03-26T11:00:00Z", next: "2021-03-26T10:30:00Z"},
		{name: "open and close at the same time: closed", gate: gateOf(gatingv1alpha1.GateOpened, time.Hour, both("2021-03-26T10:00:00Z", "2021-03-26T10:00:00Z")),
			now: "2021-03-26T10:15:00Z", cause: CauseRequest, message: "Gate scheduled for opening at 2021-03-26T11:00:00Z",
			requestedAt: "2021-03-26T10:00:00Z", resetAt: "2021-03-26T11:00:00Z", next: "2021-03-26T11:00:00Z"},
		{name: "closed, then opened within the same second from the command line or the UI: opened",
			gate: gateOf(gatingv1alpha1.GateClosed, time.Hour, lastRequest("open", both("2021-03-26T10:00:00Z", "2021-03-26T10:00:00Z"))),
			now:  "2021-03-26T10:15:00Z", open: true, cause: CauseRequest, message: "Gate scheduled for closing at 2021-03-26T11:00:00Z",
			requestedAt: "2021-03-26T10:00:00Z", resetAt: "2021-03-26T11:00:00Z", next: "2021-03-26T11:00:00Z"},
		{name: "opened, then closed within the same second from the command line or the UI: closed",
			gate: gateOf(gatingv1alpha1.GateOpened, time.Hour, lastRequest("close", both("2021-03-26T10:00:00Z", "2021-03-26T10:00:00Z"))),
			now:  "2021-03-26T10:15:00Z", cause: CauseRequest, message: "Gate scheduled for opening at 2021-03-26T11:00:00Z",
			requestedAt: "2021-03-26T10:00:00Z", resetAt: "2021-03-26T11:00:00Z", next: "2021-03-26T11:00:00Z"},
		{name: "no deploys on Friday (Berlin), on Friday", gate: gateOf(gatingv1alpha1.GateOpened, time.Hour, nil, noDeployFriday),
			now: "2026-11-27T10:00:00Z", cause: CauseSchedule,
			message: "Gate closed by schedule '0 0 * * FRI' (Europe/Berlin), scheduled for opening at 2026-11-27T23:00:00Z", next: "2026-11-27T23:00:00Z"},
		{name: "no deploys on Friday (Berlin), Thursday night in UTC is Friday in Berlin", gate: gateOf(gatingv1alpha1.GateOpened, time.Hour, nil, noDeployFriday),
			now: "2026-11-26T23:30:00Z", cause: CauseSchedule,
			message: "Gate closed by schedule '0 0 * * FRI' (Europe/Berlin), scheduled for opening at 2026-11-27T23:00:00Z", next: "2026-11-27T23:00:00Z"},
		{name: "no deploys on Friday (Berlin), on Thursday", gate: gateOf(gatingv1alpha1.GateOpened, time.Hour, nil, noDeployFriday),
			now: "2026-11-26T12:00:00Z", open: true, cause: CauseDefault,
			message: "Gate opened by default, scheduled for closing at 2026-11-26T23:00:00Z", next: "2026-11-26T23:00:00Z"},
		{name: "a request overrides a schedule (break-glass)", gate: gateOf(gatingv1alpha1.GateOpened, time.Hour, opens("2026-11-27T09:30:00Z"), noDeployFriday),
			now: "2026-11-27T10:00:00Z", open: true, cause: CauseRequest, message: "Gate scheduled for closing at 2026-11-27T10:30:00Z",
			requestedAt: "2026-11-27T09:30:00Z", resetAt: "2026-11-27T10:30:00Z", next: "2026-11-27T10:30:00Z"},
		{name: "09:00 in Berlin is 08:00 UTC in winter", gate: gateOf(gatingv1alpha1.GateOpened, time.Hour, nil, morning),
			now: "2026-03-28T08:30:00Z", cause: CauseSchedule,
			message: "Gate closed by schedule '0 9 * * *' (Europe/Berlin), scheduled for opening at 2026-03-28T09:00:00Z", next: "2026-03-28T09:00:00Z"},
		{name: "and 07:00 UTC the day after the clocks go forward", gate: gateOf(gatingv1alpha1.GateOpened, time.Hour, nil, morning),
			now: "2026-03-29T07:30:00Z", cause: CauseSchedule,
			message: "Gate closed by schedule '0 9 * * *' (Europe/Berlin), scheduled for opening at 2026-03-29T08:00:00Z", next: "2026-03-29T08:00:00Z"},
		{name: "so 08:30 UTC that day is open", gate: gateOf(gatingv1alpha1.GateOpened, time.Hour, nil, morning),
			now: "2026-03-29T08:30:00Z", open: true, cause: CauseDefault,
			message: "Gate opened by default, scheduled for closing at 2026-03-30T07:00:00Z", next: "2026-03-30T07:00:00Z"},
		{name: "and 08:00 UTC again when they go back", gate: gateOf(gatingv1alpha1.GateOpened, time.Hour, nil, morning),
			now: "2026-10-25T07:30:00Z", open: true, cause: CauseDefault,
			message: "Gate opened by default, scheduled for closing at 2026-10-25T08:00:00Z", next: "2026-10-25T08:00:00Z"},
		{name: "closing schedules win over opening ones", gate: gateOf(gatingv1alpha1.GateClosed, time.Hour, nil,
			gatingv1alpha1.GateSchedule{Action: gatingv1alpha1.ScheduleOpen, Cron: "0 * * * *", Duration: metav1.Duration{Duration: time.Hour}},
			gatingv1alpha1.GateSchedule{Action: gatingv1alpha1.ScheduleClose, Cron: "30 10 * * *", Duration: metav1.Duration{Duration: 10 * time.Minute}}),
			now: "2026-11-23T10:35:00Z", cause: CauseSchedule,
			message: "Gate closed by schedule '30 10 * * *' (UTC), scheduled for opening at 2026-11-23T10:40:00Z", next: "2026-11-23T10:40:00Z"},
		{name: "an always-active opening schedule never transitions", gate: gateOf(gatingv1alpha1.GateClosed, time.Hour, nil,
			gatingv1alpha1.GateSchedule{Action: gatingv1alpha1.ScheduleOpen, Cron: "0 * * * *", Duration: metav1.Duration{Duration: time.Hour}}),
			now: "2026-11-23T10:35:00Z", open: true, cause: CauseSchedule, message: "Gate opened by schedule '0 * * * *' (UTC)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			d, problems, err := Evaluate(tt.gate, at(tt.now))
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(problems).To(BeEmpty())
			g.Expect(d.Open).To(Equal(tt.open))
			g.Expect(d.Cause).To(Equal(tt.cause))
			g.Expect(d.Message).To(Equal(tt.message))
			expectTime(g, "requestedAt", d.RequestedAt, tt.requestedAt)
			expectTime(g, "resetToDefaultAt", d.ResetToDefaultAt, tt.resetAt)
			expectTime(g, "nextTransition", d.NextTransition, tt.next)
		})
	}
}

// expectTime checks an optional time against its RFC 3339 form ("" for
// none).
func expectTime(g *WithT, name string, got *time.Time, want string) {
	if want == "" {
		g.Expect(got).To(BeNil(), name)
		return
	}
	g.Expect(got).NotTo(BeNil(), name)
	g.Expect(got.UTC().Format(time.RFC3339)).To(Equal(want), name)
}

// TestEvaluateBadInput: an unparseable request is ignored and said; an
// invalid spec closes the gate, whatever its default and requests, and
// says why.
func TestEvaluateBadInput(t *testing.T) {
	now := at("2026-11-23T10:00:00Z")
	t.Run("an unparseable request is ignored", func(t *testing.T) {
		g := NewWithT(t)
		gate := gateOf(gatingv1alpha1.GateClosed, time.Hour, both("yesterday", "2026-11-23T09:30:00Z"))
		d, problems, err := Evaluate(gate, now)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(d.Open).To(BeFalse())
		g.Expect(d.Cause).To(Equal(CauseRequest), "the valid close request stands")
		g.Expect(problems).To(ConsistOf(Problem{Reason: gatingv1alpha1.InvalidRequestReason,
			Message: `annotation open.gate.fluxcd.io/requestedAt: "yesterday" is not an RFC 3339 time such as 2026-03-26T10:00:00Z; the request is ignored`}))
	})
	tests := []struct {
		name   string
		gate   *gatingv1alpha1.Gate
		reason string
		msg    string
	}{
		{name: "a zero window", gate: gateOf(gatingv1alpha1.GateOpened, 0, opens("2026-11-23T09:59:00Z")),
			reason: gatingv1alpha1.InvalidWindowReason, msg: "spec.window must be a positive duration, not 0s"},
		{name: "a negative window", gate: gateOf(gatingv1alpha1.GateOpened, -time.Hour, nil),
			reason: gatingv1alpha1.InvalidWindowReason, msg: "spec.window must be a positive duration, not -1h0m0s"},
		{name: "an unknown time zone", gate: gateOf(gatingv1alpha1.GateOpened, time.Hour, nil, gatingv1alpha1.GateSchedule{
			Action: gatingv1alpha1.ScheduleOpen, Cron: "0 0 * * *", Duration: metav1.Duration{Duration: time.Hour}, TimeZone: "Mars/Olympus"}),
			reason: gatingv1alpha1.InvalidScheduleReason, msg: `spec.schedules[0]: timeZone "Mars/Olympus" is not an IANA time zone such as Europe/Berlin`},
		{name: "an invalid cron", gate: gateOf(gatingv1alpha1.GateOpened, time.Hour, nil, gatingv1alpha1.GateSchedule{
			Action: gatingv1alpha1.ScheduleOpen, Cron: "0 25 * * *", Duration: metav1.Duration{Duration: time.Hour}}),
			reason: gatingv1alpha1.InvalidScheduleReason, msg: `spec.schedules[0]: cron "0 25 * * *": `},
		{name: "a zone in the cron", gate: gateOf(gatingv1alpha1.GateOpened, time.Hour, nil, gatingv1alpha1.GateSchedule{
			Action: gatingv1alpha1.ScheduleOpen, Cron: "CRON_TZ=Asia/Tokyo 0 0 * * *", Duration: metav1.Duration{Duration: time.Hour}}),
			reason: gatingv1alpha1.InvalidScheduleReason, msg: "spec.schedules[0]: cron must not name a zone: set timeZone instead"},
		{name: "a zero duration", gate: gateOf(gatingv1alpha1.GateOpened, time.Hour, nil, gatingv1alpha1.GateSchedule{
			Action: gatingv1alpha1.ScheduleOpen, Cron: "0 0 * * *"}),
			reason: gatingv1alpha1.InvalidScheduleReason, msg: "spec.schedules[1]: duration must be positive, not 0s"},
	}
	tests[len(tests)-1].gate.Spec.Schedules = append([]gatingv1alpha1.GateSchedule{noDeployFriday}, tests[len(tests)-1].gate.Spec.Schedules...)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			d, _, err := Evaluate(tt.gate, now)
			var specErr *SpecError
			g.Expect(errors.As(err, &specErr)).To(BeTrue(), "%v", err)
			g.Expect(specErr.Reason).To(Equal(tt.reason))
			g.Expect(err.Error()).To(HavePrefix(tt.msg))
			g.Expect(d.Open).To(BeFalse(), "never open by mistake")
			g.Expect(d.Cause).To(Equal(CauseInvalid))
			g.Expect(d.Message).To(Equal("Gate closed: " + err.Error()))
		})
	}
}

// countingCron counts the starts asked of a schedule.
type countingCron struct {
	cron.Schedule
	calls *int
}

func (c countingCron) Next(t time.Time) time.Time {
	*c.calls++
	return c.Schedule.Next(t)
}

// TestEvaluateWindowExtendedWithoutEnd: a schedule that closes the gate
// every minute for a day (or an hour) keeps it closed with no transition
// in sight, and deciding so asks the cron for about one start per window
// up to the horizon, not one per minute (over a million, seconds of CPU
// per reconciliation).
func TestEvaluateWindowExtendedWithoutEnd(t *testing.T) {
	for _, tt := range []struct {
		duration time.Duration
		maxCalls int
	}{
		{duration: 24 * time.Hour, maxCalls: 2 * 366 * 2},
		{duration: time.Hour, maxCalls: 2 * 366 * 24 * 2},
	} {
		t.Run(tt.duration.String(), func(t *testing.T) {
			g := NewWithT(t)
			everyMinute := gatingv1alpha1.GateSchedule{Action: gatingv1alpha1.ScheduleClose, Cron: "* * * * *",
				Duration: metav1.Duration{Duration: tt.duration}, TimeZone: "Europe/Berlin"}
			c, _, err := compile(gateOf(gatingv1alpha1.GateOpened, time.Hour, nil, everyMinute))
			g.Expect(err).NotTo(HaveOccurred())
			calls := 0
			c.schedules[0].cron = countingCron{Schedule: c.schedules[0].cron, calls: &calls}

			d := c.decide(at("2026-11-23T10:00:30Z"))
			g.Expect(d.Open).To(BeFalse())
			g.Expect(d.Because).To(ContainSubstring("'* * * * *'"))
			g.Expect(d.NextTransition).To(BeNil(), "the window never ends within the horizon")
			t.Logf("cron starts asked: %d", calls)
			g.Expect(calls).To(BeNumerically("<=", tt.maxCalls))
		})
	}
}

// BenchmarkEvaluate measures one evaluation of a gate with a request and a
// schedule, the work of one reconciliation.
func BenchmarkEvaluate(b *testing.B) {
	gate := gateOf(gatingv1alpha1.GateOpened, time.Hour, opens("2026-11-23T09:30:00Z"), noDeployFriday)
	now := at("2026-11-23T10:00:00Z")
	for b.Loop() {
		if _, _, err := Evaluate(gate, now); err != nil {
			b.Fatal(err)
		}
	}
}
