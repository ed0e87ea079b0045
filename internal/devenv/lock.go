package devenv

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// ErrAlreadyRunning says that another windlass dev holds the lock.
var ErrAlreadyRunning = errors.New("windlass dev is already running")

// lock is held by the one windlass dev of a cache folder.
type lock struct{ file *os.File }

// acquireLock takes the lock of dir, writing this process's ID and the
// kubeconfig it will write into the lock file, or says who holds it.
func acquireLock(dir, kubeconfig string) (*lock, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	path := filepath.Join(dir, "lock")
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		holder, _ := os.ReadFile(path)
		_ = f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("%w (%s): use that one, or stop it (Ctrl-C in its terminal) before starting another",
				ErrAlreadyRunning, strings.TrimSpace(string(holder)))
		}
		return nil, fmt.Errorf("locking %s: %w", path, err)
	}
	if err := f.Truncate(0); err == nil {
		_, _ = fmt.Fprintf(f, "pid %d, kubeconfig %s\n", os.Getpid(), kubeconfig)
	}
	return &lock{file: f}, nil
}

// release lets the next windlass dev start.
func (l *lock) release() {
	_ = syscall.Flock(int(l.file.Fd()), syscall.LOCK_UN)
	_ = l.file.Close()
}
