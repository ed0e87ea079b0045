//go:build !linux

package e2e

import "syscall"

// childSysProcAttr has nothing to add outside Linux: there is no parent-death
// signal, and TestMain's teardown stops the controller.
func childSysProcAttr() *syscall.SysProcAttr { return nil }
