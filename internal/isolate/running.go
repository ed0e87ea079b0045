package isolate

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"sync"

	"github.com/windlass-dev/windlass/internal/procstat"
)

// idlePIDs holds the pids of the children of every Turns that wait for
// their next job.
var idlePIDs sync.Map

// Running returns the pids of this process's live children that do
// role's work, as /proc shows them: those doing a job, not those waiting
// for their next.
func Running(role string) []int {
	var pids []int
	marker := []byte(envRole + "=" + role + "\x00")
	for _, child := range procstat.Children(os.Getpid()) {
		if _, idle := idlePIDs.Load(child.PID); idle || child.State == "Z" {
			continue
		}
		environ, _ := os.ReadFile(filepath.Join("/proc", strconv.Itoa(child.PID), "environ"))
		if bytes.Contains(environ, marker) {
			pids = append(pids, child.PID)
		}
	}
	return pids
}
