//go:build !linux

package devenv

import "errors"

// childPIDs finds no children outside Linux: the leftovers of a dead run
// are only stopped on Linux.
func childPIDs() []int { return nil }

// processExe cannot tell a process's program outside Linux.
func processExe(int) (string, error) { return "", errors.New("not supported outside Linux") }

// processStart cannot tell when a process started outside Linux.
func processStart(int) (uint64, error) { return 0, errors.New("not supported outside Linux") }
