// Package procstat finds the child processes of a process in Linux's
// /proc, with what /proc/<pid>/stat says of each (read by
// github.com/prometheus/procfs). Outside Linux there is no /proc, and no
// child is found.
package procstat

import "github.com/prometheus/procfs"

// Children returns the stat of every child of process parent, zombies
// included, leaving out those that end while it reads.
func Children(parent int) []procfs.ProcStat {
	procs, err := procfs.AllProcs()
	if err != nil {
		return nil
	}
	var out []procfs.ProcStat
	for _, p := range procs {
		if stat, err := p.Stat(); err == nil && stat.PPID == parent {
			out = append(out, stat)
		}
	}
	return out
}
