package testutil

import (
	"errors"
	"fmt"
	"time"

	. "github.com/onsi/gomega"

	"github.com/windlass-dev/windlass/internal/conditions"
	"github.com/windlass-dev/windlass/internal/reconcile"
)

// Outcome is the kind of error a reconcile step returned (see
// internal/reconcile/errors.go), for the rows of step tables.
type Outcome string

// The outcomes of a step.
const (
	// NoError: the step succeeded.
	NoError Outcome = ""
	// Stalled: a *reconcile.Stalling error.
	Stalled Outcome = "Stall"
	// Waiting: a *reconcile.Waiting error.
	Waiting Outcome = "Wait"
	// Progressing: a *reconcile.Progressing error that is not quiet.
	Progressing Outcome = "Progress"
	// ProgressingQuietly: a quiet *reconcile.Progressing error.
	ProgressingQuietly Outcome = "ProgressQuietly"
	// Holding: a *reconcile.Holding error.
	Holding Outcome = "Hold"
	// Failing: a *reconcile.Failure error.
	Failing Outcome = "Fail"
	// Untyped: an error of none of the reconcile types.
	Untyped Outcome = "Untyped"
)

// OutcomeOf returns the kind of err.
func OutcomeOf(err error) Outcome {
	var (
		s *reconcile.Stalling
		w *reconcile.Waiting
		p *reconcile.Progressing
		h *reconcile.Holding
		f *reconcile.Failure
	)
	switch {
	case err == nil:
		return NoError
	case errors.As(err, &h):
		return Holding
	case errors.As(err, &s):
		return Stalled
	case errors.As(err, &w):
		return Waiting
	case errors.As(err, &p) && p.Quiet:
		return ProgressingQuietly
	case errors.As(err, &p):
		return Progressing
	case errors.As(err, &f):
		return Failing
	}
	return Untyped
}

// ExpectOutcome asserts what a step returned: an error of kind outcome
// with reason and a message that contains msg (no error for NoError), and
// the result that goes with it, reconcile.ResultSuccess without an error
// and reconcile.ResultEmpty with one, as every step returns.
func ExpectOutcome(g Gomega, res reconcile.Result, err error, outcome Outcome, reason, msg string) {
	g.ExpectWithOffset(1, OutcomeOf(err)).To(Equal(outcome), "error: %v", err)
	if outcome == NoError {
		g.ExpectWithOffset(1, res).To(Equal(reconcile.ResultSuccess), "result")
		return
	}
	g.ExpectWithOffset(1, res).To(Equal(reconcile.ResultEmpty), "result")
	if outcome != Untyped {
		g.ExpectWithOffset(1, reconcile.ReasonOf(err, "")).To(Equal(reason), "reason of %v", err)
	}
	g.ExpectWithOffset(1, err.Error()).To(ContainSubstring(msg))
}

// RequeueAfter returns when err asks to look again: the RequeueAfter of
// a Waiting, Progressing or Holding error, the RetryAfter of a Failure,
// zero otherwise.
func RequeueAfter(err error) time.Duration {
	var (
		w *reconcile.Waiting
		p *reconcile.Progressing
		h *reconcile.Holding
		f *reconcile.Failure
	)
	switch {
	case errors.As(err, &h):
		return h.RequeueAfter
	case errors.As(err, &w):
		return w.RequeueAfter
	case errors.As(err, &p):
		return p.RequeueAfter
	case errors.As(err, &f):
		return f.RetryAfter
	}
	return 0
}

// ConditionSummary returns obj's conditions as "Type=Status/Reason", in
// order, for a step table to compare with what it wants.
func ConditionSummary(obj conditions.Getter) []string {
	conds := obj.GetConditions()
	out := make([]string, 0, len(conds))
	for _, c := range conds {
		out = append(out, fmt.Sprintf("%s=%s/%s", c.Type, c.Status, c.Reason))
	}
	return out
}
