package procstat

import (
	"os"
	"os/exec"
	"slices"
	"testing"

	. "github.com/onsi/gomega"
	"github.com/prometheus/procfs"
)

// TestChildren finds a child this test starts, and no longer once it has
// ended and been waited for.
func TestChildren(t *testing.T) {
	g := NewWithT(t)
	child := exec.Command("sleep", "60")
	g.Expect(child.Start()).To(Succeed())
	t.Cleanup(func() { _ = child.Process.Kill(); _ = child.Wait() })
	pid := child.Process.Pid
	find := func() (procfs.ProcStat, bool) {
		children := Children(os.Getpid())
		i := slices.IndexFunc(children, func(s procfs.ProcStat) bool { return s.PID == pid })
		if i < 0 {
			return procfs.ProcStat{}, false
		}
		return children[i], true
	}
	// The child is a copy of this test binary until it has run exec.
	g.Eventually(func() string { s, _ := find(); return s.Comm }).Should(Equal("sleep"))
	stat, _ := find()
	g.Expect(stat.PPID).To(Equal(os.Getpid()))
	g.Expect(Children(os.Getpid())).NotTo(ContainElement(HaveField("PID", os.Getpid())), "a process is not its own child")
	g.Expect(Children(pid)).To(BeEmpty())

	g.Expect(child.Process.Kill()).To(Succeed())
	g.Eventually(func() string { s, _ := find(); return s.State }).Should(Equal("Z"), "a child that ended is a zombie until waited for")
	g.Expect(child.Wait()).NotTo(Succeed())
	_, found := find()
	g.Expect(found).To(BeFalse())
}
