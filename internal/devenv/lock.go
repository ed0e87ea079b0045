package devenv

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/windlass-dev/windlass/internal/controlplane"
)

// ErrAlreadyRunning says that another windlass dev holds the lock.
var ErrAlreadyRunning = errors.New("windlass dev is already running")

// Record is what the lock file of a windlass dev says about its run: who
// runs it, where its kubeconfig and controllers' log are, and the
// control-plane processes it started, so that the command line can find
// the run and the next windlass dev can stop what a dead run left.
type Record struct {
	// PID is the process ID of windlass dev.
	PID int `json:"pid"`
	// Kubeconfig is the kubeconfig it writes.
	Kubeconfig string `json:"kubeconfig"`
	// Log is the controllers' log file.
	Log string `json:"log,omitempty"`
	// Version is the version of windlass that runs it.
	Version string `json:"version,omitempty"`
	// Children are the control-plane processes it started.
	Children []Child `json:"children,omitempty"`
}

// Child is a process that windlass dev started.
type Child struct {
	// Name is the program's name (etcd, kube-apiserver, …).
	Name string `json:"name"`
	// PID is its process ID.
	PID int `json:"pid"`
	// Exe is the path of its program and Started when it started (clock
	// ticks after boot): they tell it from a later process that got the
	// same ID.
	Exe     string `json:"exe"`
	Started uint64 `json:"started,omitempty"`
}

// isRunning reports whether the process c names still runs: the same ID,
// program and start time.
func (c Child) isRunning() bool {
	exe, err := processExe(c.PID)
	if err != nil || exe != c.Exe {
		return false
	}
	started, err := processStart(c.PID)
	return err == nil && c.Started != 0 && started == c.Started
}

// String is how a message names the run.
func (r Record) String() string { return fmt.Sprintf("pid %d, kubeconfig %s", r.PID, r.Kubeconfig) }

// lock is held by the one windlass dev of a cache folder.
type lock struct{ file *os.File }

// acquireLock takes the lock of dir and writes rec into it, or says who
// holds it. It returns the record that a previous run left, which names
// what that run may have left running when it did not stop cleanly.
func acquireLock(dir string, rec Record) (l *lock, previous Record, err error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, Record{}, err
	}
	path := filepath.Join(dir, "lock")
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, Record{}, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		data, _ := os.ReadFile(path)
		_ = f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			holder := strings.TrimSpace(string(data))
			if r, ok := parseRecord(data); ok {
				holder = r.String()
			}
			return nil, Record{}, fmt.Errorf("%w (%s): use that one, or stop it (Ctrl-C in its terminal) before starting another",
				ErrAlreadyRunning, holder)
		}
		return nil, Record{}, fmt.Errorf("locking %s: %w", path, err)
	}
	data, _ := os.ReadFile(path)
	previous, _ = parseRecord(data)
	l = &lock{file: f}
	l.write(rec)
	return l, previous, nil
}

// parseRecord reads a lock file's record.
func parseRecord(data []byte) (Record, bool) {
	var r Record
	if err := json.Unmarshal(data, &r); err != nil || r.PID == 0 {
		return Record{}, false
	}
	return r, true
}

// write replaces the record in the lock file.
func (l *lock) write(rec Record) {
	data, err := json.Marshal(rec)
	if err != nil {
		return
	}
	if err := l.file.Truncate(0); err == nil {
		_, _ = l.file.WriteAt(append(data, '\n'), 0)
	}
}

// release empties the record, since nothing of the run is left, and lets
// the next windlass dev start.
func (l *lock) release() {
	_ = l.file.Truncate(0)
	_ = syscall.Flock(int(l.file.Fd()), syscall.LOCK_UN)
	_ = l.file.Close()
}

// Running returns the record of the windlass dev that runs now from this
// user's cache folder, if one does: it holds the lock (a run that died
// holds none, even once its process ID is reused) and its kubeconfig
// exists.
func Running() (Record, bool) {
	path, err := RecordPath()
	if err != nil {
		return Record{}, false
	}
	f, err := os.Open(path)
	if err != nil {
		return Record{}, false
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB); err == nil {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		return Record{}, false
	} else if !errors.Is(err, syscall.EWOULDBLOCK) {
		return Record{}, false
	}
	data, err := io.ReadAll(f)
	if err != nil {
		return Record{}, false
	}
	r, ok := parseRecord(data)
	if !ok {
		return Record{}, false
	}
	if _, err := os.Stat(r.Kubeconfig); err != nil {
		return Record{}, false
	}
	return r, true
}

// RecordPath is the lock file of this user's windlass dev, which holds the
// record of the run.
func RecordPath() (string, error) {
	cache, err := controlplane.CacheDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(devDir(cache), "lock"), nil
}

// devDir is the dev folder of the cache: lock, logs and the run folder.
func devDir(cache string) string { return filepath.Join(cache, "dev") }
