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

// TestLogErrorsSince_EachProcessOnce: the replicas' error lines are
// counted from each one's own output, once each, though r0's Output holds
// its group's too; a replica started again in place, with less output than
// before, is counted from its start (the panic of a run at N=10,000 whose
// killed replica was r2: "slice bounds out of range [60:59]").
func TestLogErrorsSince_EachProcessOnce(t *testing.T) {
	g := NewWithT(t)
	replica := func(name, output string) *controller {
		p, err := childproc.Start(exec.Command("printf", output))
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(p.Err()).To(Succeed())
		return &controller{Process: p, name: name}
	}
	r0 := replica("r0", `{"level":"info","msg":"started r0"}\n`)
	r1 := replica("r1", `{"level":"error","msg":"before the kill"}\n`)
	r2 := replica("r2", `{"level":"info","msg":"started the first time, at length"}\n`)
	r0.group = []*controller{r1, r2}
	all := map[string]*controller{"r0": r0, "r1": r1, "r2": r2}
	logged := outputLengths(all)
	g.Expect(logged).To(Equal(map[string]int{"r0": len(r0.Process.Output()), "r1": len(r1.Process.Output()), "r2": len(r2.Process.Output())}))

	*r2 = *replica("r2", `{"level":"error","msg":"again"}\n`)
	logged["r2"] = 0
	n, first := logErrorsSince(all, logged)
	g.Expect(n).To(Equal(1), "r2's one error since its start, not r1's before, nor r2's twice through r0's group")
	g.Expect(first).To(ContainSubstring("again"))
}
