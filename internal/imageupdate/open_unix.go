//go:build unix

package imageupdate

import "syscall"

// openFlags make reading refuse a symbolic link as the last path element (a
// file swapped for a link after the walk) and not block on a FIFO.
const openFlags = syscall.O_NOFOLLOW | syscall.O_NONBLOCK
