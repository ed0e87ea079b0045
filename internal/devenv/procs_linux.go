package devenv

import (
	"os"
	"strconv"

	"github.com/prometheus/procfs"

	"github.com/windlass-dev/windlass/internal/procstat"
)

// childPIDs returns the IDs of this process's children, read from /proc.
func childPIDs() []int {
	var pids []int
	for _, child := range procstat.Children(os.Getpid()) {
		pids = append(pids, child.PID)
	}
	return pids
}

// processExe returns the path of the program a process runs; an error
// when there is no such process (or it is a zombie).
func processExe(pid int) (string, error) {
	return os.Readlink("/proc/" + strconv.Itoa(pid) + "/exe")
}

// processStart returns when a process started, in clock ticks after boot:
// with the ID, it names one process, as an ID reused by a later process
// has a later start.
func processStart(pid int) (uint64, error) {
	p, err := procfs.NewProc(pid)
	if err != nil {
		return 0, err
	}
	stat, err := p.Stat()
	if err != nil {
		return 0, err
	}
	return stat.Starttime, nil
}
