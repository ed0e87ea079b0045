//go:build !linux

package controlplane

import "syscall"

// sysProcAttr has nothing to add outside Linux, where there is no
// parent-death signal.
func sysProcAttr() *syscall.SysProcAttr { return nil }
