package main

import (
	"errors"
	"os/exec"
	"testing"

	. "github.com/onsi/gomega"
	"github.com/prometheus/procfs"

	"github.com/windlass-dev/windlass/internal/testutil/childproc"
)

// TestProcStats_AProcessGoneReadsAsZeros reads a real child process while
// it runs, then once it has exited and been reaped, also through a handle
// opened while it ran: the window in which a replica killed by the failover
// phase disappears between two reads of its files.
func TestProcStats_AProcessGoneReadsAsZeros(t *testing.T) {
	g := NewWithT(t)
	p, err := childproc.Start(exec.Command("sleep", "60"))
	g.Expect(err).NotTo(HaveOccurred())
	c := &controller{Process: p}

	running, err := c.procStats()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(running.PeakRSSBytes).To(BeNumerically(">", 0))
	g.Expect(running.RSSBytes).To(BeNumerically(">", 0))

	opened, err := procfs.NewProc(c.Pid())
	g.Expect(err).NotTo(HaveOccurred())
	p.Kill()
	g.Expect(p.Err()).To(HaveOccurred(), "killed")

	_, err = opened.NewStatus()
	g.Expect(err).To(HaveOccurred(), "the process's files are gone")
	g.Expect(ignoreGone(err)).To(Succeed())
	_, err = opened.Stat()
	g.Expect(err).To(HaveOccurred())
	g.Expect(ignoreGone(err)).To(Succeed())

	gone, err := c.procStats()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(gone).To(Equal(procStats{}))
	g.Expect(ignoreGone(errors.New("permission denied"))).To(HaveOccurred(), "any other error stays")
}
