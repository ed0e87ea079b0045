package testutil

import (
	"errors"

	. "github.com/onsi/gomega"

	"github.com/windlass-dev/windlass/internal/reconcile/outcome"
)

// ExpectStall asserts what a step's check returned: nil when reason is
// empty, otherwise a Stalling error (see internal/reconcile) with reason
// and a message that contains msg.
func ExpectStall(g Gomega, err error, reason, msg string) {
	if reason == "" {
		g.Expect(err).NotTo(HaveOccurred())
		return
	}
	var stalling *outcome.Stalling
	g.Expect(errors.As(err, &stalling)).To(BeTrue(), "not a stall: %v", err)
	g.Expect(stalling.Reason).To(Equal(reason))
	g.Expect(err).To(MatchError(ContainSubstring(msg)))
}
