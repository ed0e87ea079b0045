package controlplane

import "syscall"

// sysProcAttr makes the kernel kill kube-controller-manager when the
// process that started it dies, so that it never outlives windlass dev or
// a test.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
