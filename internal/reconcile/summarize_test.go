package reconcile

import (
	"errors"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/windlass-dev/windlass/api/meta"
	sourcev1 "github.com/windlass-dev/windlass/api/source/v1"
	"github.com/windlass-dev/windlass/internal/conditions"
	"github.com/windlass-dev/windlass/internal/reconcile/outcome"
)

func TestSummarize(t *testing.T) {
	const interval = time.Minute
	tests := []struct {
		name          string
		before        func(obj *sourcev1.GitRepository)
		summary       Summary
		wantReady     string
		wantReason    string
		wantStalled   bool
		wantRecon     bool
		wantReconWhy  string
		wantObserved  bool
		wantTerminal  bool
		wantErr       bool
		wantRequeueIn [2]time.Duration
	}{
		{
			name:         "success is Ready with the jittered interval",
			summary:      Summary{Result: outcome.ResultSuccess, SuccessReason: meta.SucceededReason, SuccessMessage: "stored"},
			wantReady:    "True",
			wantReason:   meta.SucceededReason,
			wantObserved: true,
			wantRequeueIn: [2]time.Duration{
				interval - interval*DefaultJitterPercent/100, interval + interval*DefaultJitterPercent/100,
			},
		},
		{
			name: "a stalling error is terminal and Stalled",
			before: func(obj *sourcev1.GitRepository) {
				conditions.MarkTrue(obj, meta.ReconcilingCondition, meta.ProgressingReason, "x")
			},
			summary:      Summary{Err: outcome.Stall("InvalidURL", errors.New("bad url"))},
			wantReady:    "False",
			wantReason:   "InvalidURL",
			wantStalled:  true,
			wantObserved: true,
			wantTerminal: true,
			wantErr:      true,
		},
		{
			name:          "progress is Ready=Unknown and requeues without error",
			summary:       Summary{Err: outcome.Progress(meta.ProgressingReason, errors.New("health check in progress"), 2*time.Second)},
			wantReady:     "Unknown",
			wantReason:    meta.ProgressingReason,
			wantRecon:     true,
			wantRequeueIn: [2]time.Duration{2 * time.Second, 2 * time.Second},
		},
		{
			name:          "a wait requeues without error",
			summary:       Summary{Err: outcome.Wait(meta.DependencyNotReadyReason, errors.New("dep"), 30*time.Second)},
			wantReady:     "False",
			wantReason:    meta.DependencyNotReadyReason,
			wantRecon:     true,
			wantReconWhy:  meta.DependencyNotReadyReason,
			wantRequeueIn: [2]time.Duration{30 * time.Second, 30 * time.Second},
		},
		{
			name:          "a wait without a reason of its own is not taken for a failure",
			summary:       Summary{Err: outcome.Wait("", errors.New("dep"), 30*time.Second)},
			wantReady:     "False",
			wantReason:    outcome.WaitingReason,
			wantRecon:     true,
			wantReconWhy:  outcome.WaitingReason,
			wantRequeueIn: [2]time.Duration{30 * time.Second, 30 * time.Second},
		},
		{
			name:         "a failure with a retry delay is an error marked as a failure (the runner retries it after the delay)",
			summary:      Summary{Err: outcome.FailRetryAfter("UpgradeFailed", errors.New("upgrade failed"), 5*time.Second)},
			wantReady:    "False",
			wantReason:   "UpgradeFailed",
			wantRecon:    true,
			wantReconWhy: meta.ProgressingWithRetryReason,
			wantErr:      true,
		},
		{
			name: "a plain error takes the reason of the first negative condition",
			before: func(obj *sourcev1.GitRepository) {
				conditions.MarkTrue(obj, meta.StalledCondition, "Old", "old")
				conditions.MarkTrue(obj, sourcev1.FetchFailedCondition, sourcev1.AuthenticationFailedReason, "denied")
			},
			summary:      Summary{Err: errors.New("denied"), NegativeConditions: []string{sourcev1.IncludeUnavailableCondition, sourcev1.FetchFailedCondition}},
			wantReady:    "False",
			wantReason:   sourcev1.AuthenticationFailedReason,
			wantRecon:    true,
			wantReconWhy: meta.ProgressingWithRetryReason,
			wantErr:      true,
		},
		{
			name: "a plain error after a stalled run does not take the stale Stalled reason",
			before: func(obj *sourcev1.GitRepository) {
				conditions.MarkTrue(obj, meta.StalledCondition, sourcev1.URLInvalidReason, "old")
			},
			summary:    Summary{Err: errors.New("host down"), NegativeConditions: []string{meta.StalledCondition, sourcev1.FetchFailedCondition}},
			wantReady:  "False",
			wantReason: meta.FailedReason,
			wantRecon:  true,
			wantErr:    true,
		},
		{
			name: "a hold keeps the last Ready and drops Reconciling beside it",
			before: func(obj *sourcev1.GitRepository) {
				conditions.MarkTrue(obj, meta.ReadyCondition, meta.SucceededReason, "stored artifact")
				conditions.MarkTrue(obj, meta.ReconcilingCondition, meta.ProgressingReason, "new generation")
			},
			summary:       Summary{Err: outcome.Hold(meta.GateClosedReason, errors.New("gate 'ns/freeze' is closed"), 10*time.Second)},
			wantReady:     "True",
			wantReason:    meta.SucceededReason,
			wantRequeueIn: [2]time.Duration{10*time.Second - 10*time.Second*DefaultJitterPercent/100, 10*time.Second + 10*time.Second*DefaultJitterPercent/100},
		},
		{
			name: "a hold keeps a failed Ready with its retry",
			before: func(obj *sourcev1.GitRepository) {
				conditions.MarkFalse(obj, meta.ReadyCondition, meta.FailedReason, "host down")
				conditions.MarkTrue(obj, meta.ReconcilingCondition, meta.ProgressingWithRetryReason, "retrying")
			},
			summary:       Summary{Err: outcome.Hold(meta.GateClosedReason, errors.New("gate closed"), time.Minute), JitterPercent: -1},
			wantReady:     "False",
			wantReason:    meta.FailedReason,
			wantRecon:     true,
			wantRequeueIn: [2]time.Duration{time.Minute, time.Minute},
		},
		{
			name: "a hold whose run restored what it serves says Ready again, as a success",
			before: func(obj *sourcev1.GitRepository) {
				conditions.MarkFalse(obj, meta.ReadyCondition, sourcev1.StorageOperationFailedReason, "artifact disappeared")
				conditions.MarkTrue(obj, meta.ReconcilingCondition, meta.ProgressingReason, "rebuilding")
			},
			summary: Summary{Err: outcome.MarkRestored(outcome.Hold(meta.GateClosedReason, errors.New("gate closed"), time.Minute)), JitterPercent: -1,
				SuccessReason: meta.SucceededReason, SuccessMessage: "stored artifact", NegativeConditions: []string{sourcev1.FetchFailedCondition}},
			wantReady:     "True",
			wantReason:    meta.SucceededReason,
			wantRequeueIn: [2]time.Duration{time.Minute, time.Minute},
		},
		{
			name: "a restored hold with a negative condition left keeps the failed Ready",
			before: func(obj *sourcev1.GitRepository) {
				conditions.MarkFalse(obj, meta.ReadyCondition, sourcev1.StorageOperationFailedReason, "artifact disappeared")
				conditions.MarkTrue(obj, sourcev1.FetchFailedCondition, sourcev1.AuthenticationFailedReason, "denied")
			},
			summary: Summary{Err: outcome.MarkRestored(outcome.Hold(meta.GateClosedReason, errors.New("gate closed"), time.Minute)), JitterPercent: -1,
				SuccessReason: meta.SucceededReason, NegativeConditions: []string{sourcev1.FetchFailedCondition}},
			wantReady:     "False",
			wantReason:    sourcev1.StorageOperationFailedReason,
			wantRequeueIn: [2]time.Duration{time.Minute, time.Minute},
		},
		{
			name:          "a hold of an object never reconciled says so in Ready",
			summary:       Summary{Err: outcome.Hold(meta.GateClosedReason, errors.New("gate 'ns/freeze' is closed"), time.Minute), JitterPercent: -1},
			wantReady:     "False",
			wantReason:    meta.GateClosedReason,
			wantRequeueIn: [2]time.Duration{time.Minute, time.Minute},
		},
		{
			name: "success with a negative condition left is not Ready",
			before: func(obj *sourcev1.GitRepository) {
				conditions.MarkTrue(obj, sourcev1.ArtifactOutdatedCondition, sourcev1.NewRevisionReason, "new")
			},
			summary:      Summary{Result: outcome.ResultSuccess, NegativeConditions: []string{sourcev1.ArtifactOutdatedCondition}, SuccessReason: meta.SucceededReason},
			wantReady:    "False",
			wantReason:   sourcev1.NewRevisionReason,
			wantObserved: true,
			wantRequeueIn: [2]time.Duration{
				interval - interval*DefaultJitterPercent/100, interval + interval*DefaultJitterPercent/100,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			obj := &sourcev1.GitRepository{}
			obj.Generation = 7
			obj.Status.ObservedGeneration = -1
			if tt.before != nil {
				tt.before(obj)
			}
			tt.summary.Interval = interval
			res, err := Summarize(obj, tt.summary)

			g.Expect(err != nil).To(Equal(tt.wantErr))
			g.Expect(errors.Is(err, reconcile.TerminalError(nil))).To(Equal(tt.wantTerminal))
			g.Expect(string(conditions.Get(obj, meta.ReadyCondition).Status)).To(Equal(tt.wantReady))
			g.Expect(conditions.Reason(obj, meta.ReadyCondition)).To(Equal(tt.wantReason))
			g.Expect(conditions.IsTrue(obj, meta.StalledCondition)).To(Equal(tt.wantStalled))
			g.Expect(conditions.IsTrue(obj, meta.ReconcilingCondition)).To(Equal(tt.wantRecon))
			if tt.wantReconWhy != "" {
				g.Expect(conditions.Reason(obj, meta.ReconcilingCondition)).To(Equal(tt.wantReconWhy))
			}
			g.Expect(obj.Status.ObservedGeneration == 7).To(Equal(tt.wantObserved))
			g.Expect(res.RequeueAfter).To(BeNumerically(">=", tt.wantRequeueIn[0]))
			g.Expect(res.RequeueAfter).To(BeNumerically("<=", tt.wantRequeueIn[1]))
		})
	}
}

func TestJitterStaysInBounds(t *testing.T) {
	g := NewWithT(t)
	seen := map[time.Duration]bool{}
	for range 200 {
		d := Jitter(100*time.Second, 10)
		g.Expect(d).To(BeNumerically(">=", 90*time.Second))
		g.Expect(d).To(BeNumerically("<=", 110*time.Second))
		seen[d] = true
	}
	g.Expect(len(seen)).To(BeNumerically(">", 1), "jitter must vary")
	g.Expect(Jitter(0, 10)).To(Equal(time.Duration(0)))
	longest := time.Duration(1<<63 - 1)
	for range 100 {
		g.Expect(Jitter(longest/2, 50)).To(BeNumerically(">", 0), "long intervals do not overflow")
		g.Expect(Jitter(longest, 10)).To(BeNumerically(">", longest/10*8), "the longest interval does not overflow")
	}
}

func TestLowestRequeuingResult(t *testing.T) {
	g := NewWithT(t)
	g.Expect(outcome.LowestRequeuingResult(outcome.ResultEmpty, outcome.ResultSuccess)).To(Equal(outcome.ResultSuccess))
	g.Expect(outcome.LowestRequeuingResult(outcome.ResultSuccess, outcome.ResultRequeue)).To(Equal(outcome.ResultRequeue))
	g.Expect(outcome.LowestRequeuingResult(outcome.ResultSuccess, outcome.ResultEmpty)).To(Equal(outcome.ResultSuccess))
}

func TestReasonOf(t *testing.T) {
	g := NewWithT(t)
	g.Expect(outcome.ReasonOf(outcome.Fail("GitOperationFailed", errors.New("x")), "F")).To(Equal("GitOperationFailed"))
	g.Expect(outcome.ReasonOf(errors.New("x"), "F")).To(Equal("F"))
}
