package devenv

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// childPIDs returns the IDs of this process's children, read from /proc.
func childPIDs() []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	self := os.Getpid()
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		fields := statFields(pid)
		if len(fields) > 1 && fields[1] == strconv.Itoa(self) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// processExe returns the path of the program a process runs; an error
// when there is no such process (or it is a zombie).
func processExe(pid int) (string, error) {
	return os.Readlink("/proc/" + strconv.Itoa(pid) + "/exe")
}

// statFields returns the fields of /proc/<pid>/stat that follow the
// command (which is in parentheses and may hold anything): state, parent
// ID, …; nil when the process is gone.
func statFields(pid int) []string {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return nil
	}
	i := strings.LastIndex(string(stat), ") ")
	if i < 0 {
		return nil
	}
	return strings.Fields(string(stat)[i+2:])
}

// processStart returns when a process started, in clock ticks after boot
// (field 22 of /proc/<pid>/stat): with the ID, it names one process, as
// an ID reused by a later process has a later start.
func processStart(pid int) (uint64, error) {
	fields := statFields(pid)
	const startField = 22 - 3 // the fields counted from the state, the third
	if len(fields) <= startField {
		return 0, fmt.Errorf("process %d: no start time", pid)
	}
	return strconv.ParseUint(fields[startField], 10, 64)
}
