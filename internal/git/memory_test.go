package git

import (
	"context"
	"crypto/rand"
	"errors"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/windlass-dev/windlass/internal/gitserver"
)

// TestClone_MemoryBudgetIsShared: Clones hold the objects they fetched,
// against one budget for the whole process, until their Client is closed;
// a Clone that would go over it fails at once with a BusyError (not
// ErrTooLarge: a retry mends it), and succeeds once the others are closed.
// A failed Clone holds nothing.
func TestClone_MemoryBudgetIsShared(t *testing.T) {
	g := NewWithT(t)
	srv := gitserver.NewForTest(t)
	base := srv.MustStartHTTP(t)
	noise := make([]byte, 256<<10)
	_, err := rand.Read(noise)
	g.Expect(err).NotTo(HaveOccurred())
	srv.MustInitRepo(t, "big.git", "main").MustCommit(t, "main", map[string]string{"noise.bin": string(noise)}, "noise")

	g.Expect(MemoryInUse()).To(BeZero())
	SetMaxMemoryBytes(600 << 10) // one clone at its peak (pack and objects), not two
	t.Cleanup(func() { SetMaxMemoryBytes(0) })
	clone := func() (*Client, error) {
		c, err := NewClient(t.TempDir(), nil, nil)
		g.Expect(err).NotTo(HaveOccurred())
		_, err = c.Clone(context.Background(), base+"/big.git", CheckoutOptions{Branch: "main", ShallowClone: true})
		return c, err
	}

	first, err := clone()
	g.Expect(err).NotTo(HaveOccurred())
	held := MemoryInUse()
	g.Expect(held).To(BeNumerically(">=", len(noise)), "the first clone holds its objects")

	second, err := clone()
	g.Expect(err).To(MatchError(ErrBusy))
	g.Expect(errors.Is(err, ErrTooLarge)).To(BeFalse(), "a busy budget is not a repository too large")
	g.Expect(err.Error()).To(ContainSubstring("600 KiB"))
	g.Expect(MemoryInUse()).To(Equal(held), "the failed clone holds nothing")
	second.Close()

	first.Close()
	g.Expect(MemoryInUse()).To(BeZero(), "closing a client gives its memory back")
	third, err := clone()
	g.Expect(err).NotTo(HaveOccurred(), "once the others are closed, a clone fits again")
	third.Close()
	g.Expect(MemoryInUse()).To(BeZero())
}
