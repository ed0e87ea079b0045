package main

import "syscall"

// childSysProcAttr makes the kernel kill the controller when the benchmark
// dies (a panic, a test -timeout), so that no controller outlives a run.
func childSysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
