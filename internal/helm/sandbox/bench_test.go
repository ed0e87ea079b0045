package sandbox

import (
	"context"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"helm.sh/helm/v4/pkg/chart/common"
)

// BenchmarkRenderOneAfterAnother renders a small chart again and again,
// as a controller installing many releases does, and reports the CPU its
// render processes used per render (child-ms/op) besides this process's
// time.
func BenchmarkRenderOneAfterAnother(b *testing.B) {
	r := New(Limits{Concurrency: 1}, nil)
	req := Request{Chart: appChart(), Values: map[string]any{"name": "bench"},
		Release: common.ReleaseOptions{Name: "bench", Namespace: "default", Revision: 1, IsInstall: true}}
	if _, err := r.Render(context.Background(), req); err != nil {
		b.Fatal(err)
	}
	before := childrenCPUSeconds()
	for b.Loop() {
		if _, err := r.Render(context.Background(), req); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric((childrenCPUSeconds()-before)*1000/float64(b.N), "child-ms/op")
}

// childrenCPUSeconds returns the CPU time of this process's children: of
// those that ended and were waited for, and of those still running.
func childrenCPUSeconds() float64 {
	var usage syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_CHILDREN, &usage)
	seconds := float64(usage.Utime.Nano()+usage.Stime.Nano()) / 1e9
	entries, _ := os.ReadDir("/proc")
	self := strconv.Itoa(os.Getpid())
	for _, e := range entries {
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		i := strings.LastIndex(string(stat), ") ")
		if i < 0 {
			continue
		}
		// Counted from the state: parent ID 1, user time 11, system 12,
		// in clock ticks (USER_HZ, 100 a second on Linux).
		fields := strings.Fields(string(stat)[i+2:])
		if len(fields) < 13 || fields[1] != self {
			continue
		}
		user, _ := strconv.ParseFloat(fields[11], 64)
		system, _ := strconv.ParseFloat(fields[12], 64)
		seconds += (user + system) / 100
	}
	return seconds
}
