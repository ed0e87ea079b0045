package devenv

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"
)

// stopLeftovers stops the processes that a previous run, which died
// without stopping them, left running (those whose program is still the
// one recorded and that started when recorded, so that a process that
// reused an ID is spared), removes
// its kubeconfig and run folder, and says so.
func (s *session) stopLeftovers(prev Record) {
	if prev.PID == 0 || prev.PID == os.Getpid() {
		return
	}
	var stopped []string
	for _, c := range prev.Children {
		if !c.isRunning() {
			continue
		}
		if killAndWait(c.PID) {
			stopped = append(stopped, fmt.Sprintf("%s (pid %d)", c.Name, c.PID))
		}
	}
	removed := s.removeLeftoverFiles(prev)
	switch {
	case len(stopped) > 0:
		s.p.line("✔ stopped what a previous windlass dev (pid %d) left running: %s; removed its files (%s)",
			prev.PID, strings.Join(stopped, ", "), strings.Join(removed, ", "))
	case len(removed) > 0:
		s.p.line("✔ removed the files a previous windlass dev (pid %d) left: %s", prev.PID, strings.Join(removed, ", "))
	}
}

// removeLeftoverFiles removes the kubeconfig and the run folder of a
// previous run, and returns those that were there.
func (s *session) removeLeftoverFiles(prev Record) []string {
	var removed []string
	for _, path := range slices.Compact([]string{prev.Kubeconfig, s.runDir()}) {
		if path == "" {
			continue
		}
		if _, err := os.Lstat(path); err != nil {
			continue
		}
		if err := os.RemoveAll(path); err == nil {
			removed = append(removed, path)
		}
	}
	return removed
}

// killAndWait kills the process and its process group (the control-plane
// processes lead their own) and waits until it is gone; it reports
// whether it was.
func killAndWait(pid int) bool {
	_ = syscall.Kill(-pid, syscall.SIGKILL)
	_ = syscall.Kill(pid, syscall.SIGKILL)
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if _, err := processExe(pid); err != nil {
			return true
		}
		time.Sleep(50 * time.Millisecond)
	}
	return false
}

// controlPlaneChildren returns the child processes of this process whose
// program is in the assets folder: the control plane.
func controlPlaneChildren(assets string) []Child {
	var out []Child
	for _, pid := range childPIDs() {
		exe, err := processExe(pid)
		if err != nil || filepath.Dir(exe) != filepath.Clean(assets) {
			continue
		}
		started, err := processStart(pid)
		if err != nil {
			continue
		}
		out = append(out, Child{Name: filepath.Base(exe), PID: pid, Exe: exe, Started: started})
	}
	return out
}
