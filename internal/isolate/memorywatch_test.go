package isolate

import (
	"bufio"
	"fmt"
	"io"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

// TestMemoryWatchChecksOnlyWhileAJobRuns: the watch checks the memory
// again and again while a job runs, not at all while the child waits for
// the next, and says when a check finds it over.
func TestMemoryWatchChecksOnlyWhileAJobRuns(t *testing.T) {
	g := NewWithT(t)
	var checks, overAt, exceeded atomic.Int64
	overAt.Store(-1)
	watch := newMemoryWatch(func() bool {
		n := checks.Add(1)
		return n == overAt.Load()
	})
	go watch.run(func() { exceeded.Add(1) })

	g.Consistently(checks.Load, 100*time.Millisecond, 10*time.Millisecond).Should(BeZero(), "no job yet")
	watch.working(true)
	g.Eventually(checks.Load, 10*time.Second, time.Millisecond).Should(BeNumerically(">=", 5), "checked while the job runs")
	watch.working(false)
	idle := checks.Load()
	g.Consistently(checks.Load, 200*time.Millisecond, 10*time.Millisecond).Should(Equal(idle), "not checked while idle")

	overAt.Store(idle + 3)
	watch.working(true)
	g.Eventually(exceeded.Load, 10*time.Second, time.Millisecond).Should(Equal(int64(1)), "told once the memory is over")
	watch.working(false)
}

// TestServeJobsTellsTheWatchWhenEachJobRuns: the watch is told that a job
// runs before its work reads anything, and that it ended once its answer
// is written; a job that fails ends the child with its code.
func TestServeJobsTellsTheWatchWhenEachJobRuns(t *testing.T) {
	g := NewWithT(t)
	var events []string
	working := func(busy bool) {
		events = append(events, map[bool]string{true: "working", false: "idle"}[busy])
	}
	in := bufio.NewReader(strings.NewReader("one\ntwo\nfail\nnever\n"))
	var out strings.Builder
	work := func(r io.Reader, w io.Writer) int {
		line, _ := r.(*bufio.Reader).ReadString('\n')
		events = append(events, "job "+strings.TrimSpace(line))
		if line == "fail\n" {
			return 5
		}
		fmt.Fprint(w, line)
		return 0
	}

	g.Expect(serveJobs(in, &out, work, working)).To(Equal(5))
	g.Expect(events).To(Equal([]string{"working", "job one", "idle", "working", "job two", "idle", "working", "job fail", "idle"}))
	g.Expect(out.String()).To(Equal("one\ntwo\n"))

	events = nil
	g.Expect(serveJobs(bufio.NewReader(strings.NewReader("")), &out, work, working)).To(BeZero(), "no more work")
	g.Expect(events).To(BeEmpty())
}
