package childproc

import "syscall"

// SysProcAttr makes the kernel kill the child when its parent dies (a panic,
// a test -timeout), so that no controller outlives a run.
func SysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
