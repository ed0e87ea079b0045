package e2e

import "syscall"

// childSysProcAttr makes the kernel kill a child process when the test
// binary dies (a panic, a -timeout), so that no controller outlives a run.
func childSysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
