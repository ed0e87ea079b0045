package sandbox

import (
	"context"
	"os"
	"syscall"
	"testing"

	"helm.sh/helm/v4/pkg/chart/common"

	"github.com/windlass-dev/windlass/internal/procstat"
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
	for _, child := range procstat.Children(os.Getpid()) {
		seconds += child.CPUTime()
	}
	return seconds
}
