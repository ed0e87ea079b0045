package devenv

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
)

// TestStopLeftovers: a run that finds the record of a dead run stops the
// processes it names (when they still run the recorded program; another
// process that got the same ID is spared), removes its kubeconfig and run
// folder, and says so.
func TestStopLeftovers(t *testing.T) {
	g := NewWithT(t)
	leftover, other, reused := startSleep(t), startSleep(t), startSleep(t)
	dir := t.TempDir()
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	g.Expect(os.WriteFile(kubeconfig, []byte("stale"), 0o600)).To(Succeed())
	var out bytes.Buffer
	s := &session{dir: dir, p: newPrinter(&out, false)}
	g.Expect(os.MkdirAll(filepath.Join(s.runDir(), "etcd"), 0o700)).To(Succeed())
	sleepExe, err := processExe(leftover.Process.Pid)
	g.Expect(err).NotTo(HaveOccurred())
	started, err := processStart(leftover.Process.Pid)
	g.Expect(err).NotTo(HaveOccurred())
	reusedStart, err := processStart(reused.Process.Pid)
	g.Expect(err).NotTo(HaveOccurred())
	dead := Record{PID: 999999, Kubeconfig: kubeconfig, Children: []Child{
		{Name: "etcd", PID: leftover.Process.Pid, Exe: sleepExe, Started: started},
		{Name: "kube-apiserver", PID: other.Process.Pid, Exe: "/not/what/it/runs/kube-apiserver", Started: started},
		// The same program under the same ID, started at another time: a
		// process that reused the ID of one the dead run recorded.
		{Name: "kube-controller-manager", PID: reused.Process.Pid, Exe: sleepExe, Started: reusedStart - 1},
	}}
	l, _, err := acquireLock(dir, dead)
	g.Expect(err).NotTo(HaveOccurred())
	l.file.Close() // the run dies

	l, previous, err := acquireLock(dir, Record{PID: os.Getpid(), Kubeconfig: kubeconfig})
	g.Expect(err).NotTo(HaveOccurred())
	defer l.release()
	s.stopLeftovers(previous)

	g.Expect(leftover.Wait()).To(MatchError(ContainSubstring("killed")), "the leftover is stopped")
	g.Expect(other.ProcessState).To(BeNil(), "a process that only has a recorded ID is spared")
	_, err = processExe(other.Process.Pid)
	g.Expect(err).NotTo(HaveOccurred())
	_, err = processExe(reused.Process.Pid)
	g.Expect(err).NotTo(HaveOccurred(), "a process that runs the recorded program but started later is spared")
	g.Expect(kubeconfig).NotTo(BeAnExistingFile())
	g.Expect(s.runDir()).NotTo(BeADirectory())
	g.Expect(out.String()).To(Equal(fmt.Sprintf(
		"✔ stopped what a previous windlass dev (pid 999999) left running: etcd (pid %d); removed its files (%s, %s)\n",
		leftover.Process.Pid, kubeconfig, s.runDir())))
}

// startSleep starts a process that runs until it is killed.
func startSleep(t *testing.T) *exec.Cmd {
	t.Helper()
	cmd := exec.Command("sleep", "600")
	NewWithT(t).Expect(cmd.Start()).To(Succeed())
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})
	return cmd
}
