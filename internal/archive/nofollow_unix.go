//go:build unix

package archive

import "syscall"

// noFollow makes OpenFile refuse to open a symbolic link as the last element.
const noFollow = syscall.O_NOFOLLOW
