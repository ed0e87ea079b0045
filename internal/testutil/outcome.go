package testutil

import (
	"errors"
	"fmt"
	"time"

	. "github.com/onsi/gomega"

	"github.com/windlass-dev/windlass/internal/conditions"
	"github.com/windlass-dev/windlass/internal/reconcile/outcome"
)

// Outcome is the kind of error a reconcile step returned (see
// internal/reconcile/errors.go), for the rows of step tables.
type Outcome string

// The outcomes of a step.
const (
	// NoError: the step succeeded.
	NoError Outcome = ""
	// Stalled: a *outcome.Stalling error.
	Stalled Outcome = "Stall"
	// Waiting: a *outcome.Waiting error.
	Waiting Outcome = "Wait"
	// Progressing: a *outcome.Progressing error that is not quiet.
	Progressing Outcome = "Progress"
	// ProgressingQuietly: a quiet *outcome.Progressing error.
	ProgressingQuietly Outcome = "ProgressQuietly"
	// Holding: a *outcome.Holding error.
	Holding Outcome = "Hold"
	// Failing: a *outcome.Failure error.
	Failing Outcome = "Fail"
	// Untyped: an error of none of the reconcile types.
	Untyped Outcome = "Untyped"
)

// OutcomeOf returns the kind of err.
func OutcomeOf(err error) Outcome {
	var (
		s *outcome.Stalling
		w *outcome.Waiting
		p *outcome.Progressing
		h *outcome.Holding
		f *outcome.Failure
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

// ExpectOutcome asserts what a step returned: an error of kind want with
// reason and a message that contains msg (no error for NoError; see
// ExpectError), and the result that goes with it,
// outcome.ResultSuccess without an error and outcome.ResultEmpty with one,
// as every step returns.
func ExpectOutcome(g Gomega, res outcome.Result, err error, want Outcome, reason, msg string) {
	if err == nil {
		g.ExpectWithOffset(1, res).To(Equal(outcome.ResultSuccess), "result")
	} else {
		g.ExpectWithOffset(1, res).To(Equal(outcome.ResultEmpty), "result")
	}
	expectError(g, 2, err, want, reason, msg)
}

// ExpectError asserts an error of kind want with reason and a message
// that contains msg, or no error for NoError.
func ExpectError(g Gomega, err error, want Outcome, reason, msg string) {
	expectError(g, 2, err, want, reason, msg)
}

func expectError(g Gomega, offset int, err error, want Outcome, reason, msg string) {
	g.ExpectWithOffset(offset, OutcomeOf(err)).To(Equal(want), "error: %v", err)
	if want == NoError {
		return
	}
	if want != Untyped {
		g.ExpectWithOffset(offset, outcome.ReasonOf(err, "")).To(Equal(reason), "reason of %v", err)
	}
	g.ExpectWithOffset(offset, err.Error()).To(ContainSubstring(msg))
}

// RequeueAfter returns when err asks to look again: the RequeueAfter of
// a Waiting, Progressing or Holding error, the RetryAfter of a Failure,
// zero otherwise.
func RequeueAfter(err error) time.Duration {
	var (
		w *outcome.Waiting
		p *outcome.Progressing
		h *outcome.Holding
		f *outcome.Failure
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
