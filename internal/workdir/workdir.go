// Package workdir keeps the temporary files and folders of a windlass
// process (clones, downloads, extracted artifacts, packaged charts) in one
// folder of the process's own, so that what a killed process leaves behind
// can be found and removed by the next one.
//
// A temporary folder made with os.MkdirTemp("", ...) is removed only by
// the process that made it: a controller killed by SIGKILL or the OOM
// killer leaves its clones in /tmp, which in a pod is an emptyDir that
// outlives the container's restarts. Here every process keeps its work
// under
//
//	$TMPDIR/windlass-work-<uid>/<id>/
//
// next to a lock file $TMPDIR/windlass-work-<uid>/<id>.lock that it holds
// with flock(LOCK_EX) for as long as it lives. The kernel releases a flock
// when the last descriptor of the file closes, so when its process dies
// however it dies; unlike a process ID written in a file, this is not
// fooled by a reused ID or by a PID namespace where every controller is
// process 1. The folder is made on first use, and removed by Remove when
// the process exits (cmd/windlass calls it). Sweep, run when the
// controller and `windlass dev` start,
// removes the folder and the lock file of every owner whose lock it can
// take, and never one whose lock is held.
//
// There is no moment at which a folder exists without its lock held: a
// process first creates its lock file under a fresh name (O_EXCL), takes
// the lock, checks that the name still points at the file it locked, and
// only then makes the folder. A sweeper that took the lock in between
// removes the lock file, so that check fails and the process starts again
// with another name; a sweeper that comes later finds the lock held.
// Sweep removes a folder before its lock file, while holding the lock, so
// a folder without a lock file is never left by either side.
//
// The root folder carries the user ID and must be a folder of this user
// that nobody else may enter, as tmux does with its socket folder: two
// users sharing /tmp each get their own, and a folder planted by another
// user (to have our work written through a link of theirs) is refused.
// Temporary folders that earlier versions made directly under $TMPDIR are
// not swept: their owner cannot be told.
package workdir

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// lockSuffix ends the name of an owner's lock file; the folder has the
// same name without it.
const lockSuffix = ".lock"

var (
	// mu guards owned.
	mu sync.Mutex
	// owned is this process's folder, nil until first used.
	owned *folder
)

// folder is a work folder and the lock file that its owner holds.
type folder struct {
	// dir is the folder.
	dir string
	// lock is dir+lockSuffix, flocked by the owner. Keeping the *os.File
	// referenced keeps the descriptor, and so the lock, open.
	lock *os.File
}

// Root returns the folder that holds the work folders of every windlass
// process of this user: $TMPDIR/windlass-work-<uid>.
func Root() string {
	return filepath.Join(os.TempDir(), "windlass-work-"+strconv.Itoa(os.Getuid()))
}

// Dir returns this process's work folder, making it (under Root, as
// $TMPDIR is then) on first use.
func Dir() (string, error) {
	mu.Lock()
	defer mu.Unlock()
	if owned == nil {
		f, err := newFolder(Root())
		if err != nil {
			return "", err
		}
		owned = f
	}
	return owned.dir, nil
}

// MkdirTemp is os.MkdirTemp in this process's work folder: it creates a
// new folder whose name is pattern with a random string in place of the
// last "*" (or appended), and returns its path. The caller removes it.
func MkdirTemp(pattern string) (string, error) {
	return inDir(func(dir string) (string, error) { return os.MkdirTemp(dir, pattern) })
}

// CreateTemp is os.CreateTemp in this process's work folder: it creates
// and opens a new file, named as MkdirTemp names folders. The caller
// closes and removes it.
func CreateTemp(pattern string) (*os.File, error) {
	return inDir(func(dir string) (*os.File, error) { return os.CreateTemp(dir, pattern) })
}

// inDir calls create with this process's folder. When the folder is gone
// (something removed it, as `windlass dev` removes its run folder between
// two sessions of one process), it makes a new one and calls create again.
func inDir[T any](create func(dir string) (T, error)) (T, error) {
	dir, err := Dir()
	if err != nil {
		var zero T
		return zero, err
	}
	v, err := create(dir)
	if err == nil || !errors.Is(err, fs.ErrNotExist) {
		return v, err
	}
	forget(dir)
	if dir, err = Dir(); err != nil {
		return v, err
	}
	return create(dir)
}

// forget drops this process's folder if it is still dir, so that the next
// use makes a new one; its lock file, if it is still there, goes too.
func forget(dir string) {
	mu.Lock()
	defer mu.Unlock()
	if owned != nil && owned.dir == dir {
		if stillAt(owned.lock) {
			_ = os.Remove(owned.lock.Name())
		}
		_ = owned.lock.Close()
		owned = nil
	}
}

// Remove removes this process's work folder and its lock file, if it made
// them; a later use makes new ones. A process calls it when it exits; one
// that dies instead leaves them to the next Sweep.
func Remove() error {
	mu.Lock()
	defer mu.Unlock()
	if owned == nil {
		return nil
	}
	f := owned
	owned = nil
	defer f.lock.Close()
	if err := os.RemoveAll(f.dir); err != nil {
		return err
	}
	if err := os.Remove(f.lock.Name()); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// newFolder makes a work folder under root, and its lock file, held.
func newFolder(root string) (*folder, error) {
	if err := makeRoot(root); err != nil {
		return nil, err
	}
	for {
		lock, err := lockedFile(root)
		if err != nil {
			return nil, err
		}
		if lock == nil {
			continue // a sweeper removed it before it was locked
		}
		dir := strings.TrimSuffix(lock.Name(), lockSuffix)
		if err := os.Mkdir(dir, 0o700); err != nil {
			_ = os.Remove(lock.Name())
			_ = lock.Close()
			return nil, fmt.Errorf("making a work folder: %w", err)
		}
		return &folder{dir: dir, lock: lock}, nil
	}
}

// lockedFile creates a lock file under a new name in root and locks it.
// It returns nil, and no error, when the file was removed before the lock
// was taken: the caller tries another name.
func lockedFile(root string) (*os.File, error) {
	f, err := os.CreateTemp(root, "*"+lockSuffix)
	if err != nil {
		return nil, fmt.Errorf("making a work folder's lock file: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		_ = os.Remove(f.Name())
		_ = f.Close()
		return nil, fmt.Errorf("locking %s: %w", f.Name(), err)
	}
	if !stillAt(f) {
		_ = f.Close()
		return nil, nil
	}
	return f, nil
}

// stillAt reports whether f's name still names f, and not nothing or
// another file.
func stillAt(f *os.File) bool {
	opened, err := f.Stat()
	if err != nil {
		return false
	}
	named, err := os.Lstat(f.Name())
	return err == nil && os.SameFile(opened, named)
}

// makeRoot makes root if it is missing and checks that it is a folder of
// this user that nobody else may enter.
func makeRoot(root string) error {
	if err := os.Mkdir(root, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("making the work folders' root: %w", err)
	}
	return checkRoot(root)
}

// checkRoot checks that root is a folder (not a link), owned by this
// user, with no access for the group or others.
func checkRoot(root string) error {
	info, err := os.Lstat(root)
	if err != nil {
		return err
	}
	st, ok := info.Sys().(*syscall.Stat_t)
	switch {
	case !info.IsDir():
		return fmt.Errorf("%s is not a folder: remove it", root)
	case !ok || int(st.Uid) != os.Getuid():
		return fmt.Errorf("%s belongs to another user: remove it", root)
	case info.Mode().Perm()&0o077 != 0:
		return fmt.Errorf("%s may be entered by other users (mode %v): remove it", root, info.Mode().Perm())
	}
	return nil
}
