package workdir

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/go-logr/logr"
)

// Swept is what Sweep removed.
type Swept struct {
	// Folders counts the owners swept: a work folder and its lock file
	// each, or a lock file alone when its owner had not made the folder.
	Folders int
	// Bytes adds up the sizes of the files in those folders.
	Bytes int64
}

// Sweep removes, under Root, the work folder and the lock file of every
// process that is gone (its lock can be taken), and logs one line with
// what it removed. The folders of live processes, this one's included, are
// left alone. An error is logged too, and returned; what could be removed
// was.
func Sweep(log logr.Logger) (Swept, error) {
	root := Root()
	swept, err := sweep(root)
	if err != nil {
		log.Error(err, "Sweeping the work folders of dead processes", "root", root, "folders", swept.Folders, "bytes", swept.Bytes)
		return swept, err
	}
	log.Info("Swept the work folders of dead processes", "root", root, "folders", swept.Folders, "bytes", swept.Bytes)
	return swept, nil
}

// sweep removes the folders of the dead owners under root.
func sweep(root string) (Swept, error) {
	entries, err := os.ReadDir(root)
	if errors.Is(err, fs.ErrNotExist) {
		return Swept{}, nil
	}
	if err == nil {
		err = checkRoot(root)
	}
	if err != nil {
		return Swept{}, err
	}
	var swept Swept
	var errs []error
	for _, e := range entries {
		name, isLock := strings.CutSuffix(e.Name(), lockSuffix)
		if !isLock || !e.Type().IsRegular() {
			continue
		}
		n, removed, err := sweepOwner(filepath.Join(root, name))
		if removed {
			swept.Folders++
			swept.Bytes += n
		}
		errs = append(errs, err)
	}
	return swept, errors.Join(errs...)
}

// sweepOwner removes the folder dir and its lock file when the lock can be
// taken: its owner is dead. It returns the bytes removed, and whether the
// owner was swept. The lock is held until both are gone, so that no other
// sweeper sees a folder without a lock file.
func sweepOwner(dir string) (int64, bool, error) {
	lock, err := os.OpenFile(dir+lockSuffix, os.O_RDONLY, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, false, nil // swept by another process meanwhile
	}
	if err != nil {
		return 0, false, err
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return 0, false, nil // its owner lives
		}
		return 0, false, err
	}
	if !stillAt(lock) {
		return 0, false, nil // swept by another process meanwhile
	}
	n := filesSize(dir)
	if err := os.RemoveAll(dir); err != nil {
		return 0, false, err
	}
	if err := os.Remove(lock.Name()); err != nil {
		return n, true, err
	}
	return n, true, nil
}

// filesSize adds up the sizes of the regular files under dir, as far as
// they can be read.
func filesSize(dir string) int64 {
	var n int64
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if info, err := d.Info(); err == nil {
				n += info.Size()
			}
		}
		return nil // an unreadable entry is not counted
	})
	return n
}
