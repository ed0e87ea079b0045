//go:build !linux

package childproc

import "syscall"

// SysProcAttr has nothing to add outside Linux, where there is no
// parent-death signal.
func SysProcAttr() *syscall.SysProcAttr { return nil }
