//go:build !linux

package main

import "syscall"

// childSysProcAttr has nothing to add outside Linux: there is no parent-death
// signal, and the benchmark's teardown stops the controller. The figures
// read from /proc are zero there.
func childSysProcAttr() *syscall.SysProcAttr { return nil }
