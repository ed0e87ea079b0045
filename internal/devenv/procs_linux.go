package devenv

import (
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
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// The fields after the command, which is in parentheses and may
		// hold anything, are: state, parent ID, …
		i := strings.LastIndex(string(stat), ") ")
		if i < 0 {
			continue
		}
		fields := strings.Fields(string(stat)[i+2:])
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
