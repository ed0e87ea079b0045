package isolate

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"sync"
)

// idlePIDs holds the pids of the children of every Turns that wait for
// their next job.
var idlePIDs sync.Map

// Running returns the pids of this process's live children that do
// role's work, as /proc shows them: those doing a job, not those waiting
// for their next.
func Running(role string) []int {
	var pids []int
	entries, _ := os.ReadDir("/proc")
	marker := []byte(envRole + "=" + role + "\x00")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if _, idle := idlePIDs.Load(pid); idle {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// After the command's closing parenthesis: its state, its parent.
		fields := bytes.Fields(stat[bytes.LastIndexByte(stat, ')')+1:])
		if len(fields) < 2 || string(fields[1]) != strconv.Itoa(os.Getpid()) || string(fields[0]) == "Z" {
			continue
		}
		environ, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if bytes.Contains(environ, marker) {
			pids = append(pids, pid)
		}
	}
	return pids
}
