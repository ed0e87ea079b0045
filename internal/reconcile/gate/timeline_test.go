package gate

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	gatingv1alpha1 "github.com/windlass-dev/windlass/api/gating/v1alpha1"
	"github.com/windlass-dev/windlass/api/meta"
)

// span is a span of a timeline as the tests write it.
type span struct {
	from, to string
	open     bool
	cause    Cause
}

func TestTimeline(t *testing.T) {
	everyMinute := gatingv1alpha1.GateSchedule{Action: gatingv1alpha1.ScheduleOpen, Cron: "*/2 * * * *",
		Duration: metav1.Duration{Duration: time.Minute}}
	tests := []struct {
		name     string
		gate     *gatingv1alpha1.Gate
		from, to string
		want     []span
		spans    int
	}{
		{name: "the default all along", gate: gateOf(gatingv1alpha1.GateClosed, time.Hour, nil),
			from: "2026-03-23T00:00:00Z", to: "2026-03-30T00:00:00Z",
			want: []span{{"2026-03-23T00:00:00Z", "2026-03-30T00:00:00Z", false, CauseDefault}}},
		{name: "a request in force, then the default", gate: gateOf(gatingv1alpha1.GateClosed, 2*time.Hour, opens("2026-03-23T09:00:00Z")),
			from: "2026-03-23T10:00:00Z", to: "2026-03-24T00:00:00Z",
			want: []span{{"2026-03-23T10:00:00Z", "2026-03-23T11:00:00Z", true, CauseRequest},
				{"2026-03-23T11:00:00Z", "2026-03-24T00:00:00Z", false, CauseDefault}}},
		{name: "no deploy Friday, in Berlin's time", gate: gateOf(gatingv1alpha1.GateOpened, time.Hour, nil, noDeployFriday),
			from: "2026-03-23T00:00:00Z", to: "2026-03-30T00:00:00Z",
			want: []span{{"2026-03-23T00:00:00Z", "2026-03-26T23:00:00Z", true, CauseDefault},
				{"2026-03-26T23:00:00Z", "2026-03-27T23:00:00Z", false, CauseSchedule},
				{"2026-03-27T23:00:00Z", "2026-03-30T00:00:00Z", true, CauseDefault}}},
		{name: "a planned close request", gate: gateOf(gatingv1alpha1.GateOpened, 24*time.Hour, closes("2026-03-25T12:00:00Z")),
			from: "2026-03-23T00:00:00Z", to: "2026-03-30T00:00:00Z",
			want: []span{{"2026-03-23T00:00:00Z", "2026-03-25T12:00:00Z", true, CauseDefault},
				{"2026-03-25T12:00:00Z", "2026-03-26T12:00:00Z", false, CauseRequest},
				{"2026-03-26T12:00:00Z", "2026-03-30T00:00:00Z", true, CauseDefault}}},
		{name: "a schedule of thousands of windows a week is cut", gate: gateOf(gatingv1alpha1.GateClosed, time.Hour, nil, everyMinute),
			from: "2026-03-23T00:00:00Z", to: "2026-03-30T00:00:00Z", spans: MaxSpans},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			got, err := Timeline(tc.gate, at(tc.from), at(tc.to))
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got[0].From).To(Equal(at(tc.from)))
			g.Expect(got[len(got)-1].To).To(Equal(at(tc.to)))
			for i := 1; i < len(got); i++ {
				g.Expect(got[i].From).To(Equal(got[i-1].To), "spans follow each other")
			}
			if tc.spans > 0 {
				g.Expect(got).To(HaveLen(tc.spans))
				return
			}
			var written []span
			for _, s := range got {
				written = append(written, span{s.From.UTC().Format(time.RFC3339), s.To.UTC().Format(time.RFC3339), s.Open, s.Cause})
			}
			g.Expect(written).To(Equal(tc.want))
		})
	}
}

func TestTimelineOfAnInvalidSpecIsClosed(t *testing.T) {
	g := NewWithT(t)
	bad := gateOf(gatingv1alpha1.GateOpened, time.Hour, nil, gatingv1alpha1.GateSchedule{Action: gatingv1alpha1.ScheduleOpen,
		Cron: "not a cron", Duration: metav1.Duration{Duration: time.Hour}})
	got, err := Timeline(bad, at("2026-03-23T00:00:00Z"), at("2026-03-30T00:00:00Z"))
	g.Expect(err).To(HaveOccurred())
	g.Expect(got).To(Equal([]Span{{From: at("2026-03-23T00:00:00Z"), To: at("2026-03-30T00:00:00Z"), Open: false, Cause: CauseInvalid}}))
}

// TestRequest makes requests as the command line and the UI do: the
// patch and ApplyTo set the same annotations, an empty reason removes an
// earlier one, and the reason shows in the decision.
func TestRequest(t *testing.T) {
	now := at("2026-03-23T10:00:00Z").Add(300 * time.Millisecond)
	for _, tc := range []struct {
		name       string
		req        func() Request
		action     string
		annotation string
		reason     any
		window     any
		message    string
	}{
		{name: "open with a reason and a window", req: func() Request {
			r := NewRequest(true, now)
			r.Reason, r.Window = "release   1.4\napproved", 2*time.Hour
			return r
		}, action: "open", annotation: gatingv1alpha1.OpenRequestAnnotation, reason: "release   1.4\napproved", window: "2h0m0s",
			message: "Gate open requested; reason: release 1.4 approved"},
		{name: "close without a reason removes the last one", req: func() Request { return NewRequest(false, now) },
			action: "close", annotation: gatingv1alpha1.CloseRequestAnnotation, reason: nil, message: "Gate scheduled for opening at 2026-03-23T11:00:00Z"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			req := tc.req()
			g.Expect(req.At).To(Equal(at("2026-03-23T10:00:00Z")))
			raw, err := req.Patch()
			g.Expect(err).NotTo(HaveOccurred())
			var patch struct {
				Metadata struct {
					Annotations map[string]any `json:"annotations"`
				} `json:"metadata"`
				Spec map[string]any `json:"spec"`
			}
			g.Expect(json.Unmarshal(raw, &patch)).To(Succeed())
			reasonKey := strings.Replace(tc.annotation, "gate.fluxcd.io/requestedAt", "gate.windlass.dev/reason", 1)
			g.Expect(patch.Metadata.Annotations).To(Equal(map[string]any{tc.annotation: "2026-03-23T10:00:00Z",
				gatingv1alpha1.LastRequestAnnotation: tc.action, meta.ReconcileRequestAnnotation: "2026-03-23T10:00:00.3Z", reasonKey: tc.reason}))
			if tc.window == nil {
				g.Expect(patch.Spec).To(BeNil(), "no --for, no window")
			} else {
				g.Expect(patch.Spec["window"]).To(Equal(tc.window))
			}

			gt := gateOf(gatingv1alpha1.GateOpened, time.Hour, map[string]string{reasonKey: "an old reason"})
			req.ApplyTo(gt)
			d, _, err := Evaluate(gt, now)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(d.Message).To(Equal(tc.message))
		})
	}
}

// TestReasonIsCut keeps a long reason from making a long message.
func TestReasonIsCut(t *testing.T) {
	g := NewWithT(t)
	gt := gateOf(gatingv1alpha1.GateOpened, time.Hour, map[string]string{gatingv1alpha1.CloseRequestAnnotation: "2026-03-23T10:00:00Z",
		gatingv1alpha1.CloseReasonAnnotation: strings.Repeat("x", 1000)})
	d, _, err := Evaluate(gt, at("2026-03-23T10:00:01Z"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(d.Message).To(Equal("Gate scheduled for opening at 2026-03-23T11:00:00Z; reason: " + strings.Repeat("x", MaxReasonLength-1) + "…"))
	g.Expect(d.Because).To(Equal("the close request of 2026-03-23T10:00:00Z"), "the event of the transition says the reason once, with the message")
}
