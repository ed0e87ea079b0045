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
// again and again while a job runs, once more when it ends (before the
// child waits for the next), not at all while the child waits, and says
// when a check finds it over.
func TestMemoryWatchChecksOnlyWhileAJobRuns(t *testing.T) {
	g := NewWithT(t)
	var checks, exceeded atomic.Int64
	var over atomic.Bool
	watch := newMemoryWatch(func() bool {
		checks.Add(1)
		return over.Load()
	}, func() { exceeded.Add(1) })
	go watch.run()

	g.Consistently(checks.Load, 100*time.Millisecond, 10*time.Millisecond).Should(BeZero(), "no job yet")
	watch.working(true)
	g.Eventually(checks.Load, 10*time.Second, time.Millisecond).Should(BeNumerically(">=", 5), "checked while the job runs")
	watch.working(false)
	idle := checks.Load()
	g.Consistently(checks.Load, 200*time.Millisecond, 10*time.Millisecond).Should(Equal(idle), "not checked while idle")
	g.Expect(exceeded.Load()).To(BeZero())

	over.Store(true)
	watch.working(true)
	g.Eventually(exceeded.Load, 10*time.Second, time.Millisecond).Should(BeNumerically(">=", 1), "told once the memory is over")
	over.Store(false)
	watch.working(false)

	// Memory a job leaves held is found as it ends, not when the next
	// job starts.
	told := exceeded.Load()
	over.Store(true)
	watch.working(false)
	g.Expect(exceeded.Load()).To(Equal(told+1), "the check at the job's end is done when working(false) returns")
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

	g.Expect(serveJobs(in, &out, work, working, func() {}, time.Hour)).To(Equal(5))
	g.Expect(events).To(Equal([]string{"working", "job one", "idle", "working", "job two", "idle", "working", "job fail", "idle"}))
	g.Expect(out.String()).To(Equal("one\ntwo\n"))

	events = nil
	g.Expect(serveJobs(bufio.NewReader(strings.NewReader("")), &out, work, working, func() {}, time.Hour)).To(BeZero(), "no more work")
	g.Expect(events).To(BeEmpty())
}

// TestServeJobsReleasesMemoryOnceIdle: the memory the jobs held is given
// back once the child has waited its idle time for the next job, not after
// each job.
func TestServeJobsReleasesMemoryOnceIdle(t *testing.T) {
	echo := func(r io.Reader, w io.Writer) int {
		line, _ := r.(*bufio.Reader).ReadString('\n')
		fmt.Fprint(w, line)
		return 0
	}
	// serve serves echo jobs with idle time idle and returns a function
	// that runs one job, the count of releases and a function that ends
	// the child.
	serve := func(g *WithT, idle time.Duration) (func(), *atomic.Int64, func()) {
		var released atomic.Int64
		jobs, send := io.Pipe()
		answers, answered := io.Pipe()
		done := make(chan int)
		go func() {
			done <- serveJobs(bufio.NewReader(jobs), answered, echo, func(bool) {}, func() { released.Add(1) }, idle)
		}()
		replies := bufio.NewReader(answers)
		job := func() {
			fmt.Fprintln(send, "job")
			line, err := replies.ReadString('\n')
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(line).To(Equal("job\n"))
		}
		end := func() {
			g.Expect(send.Close()).To(Succeed())
			g.Eventually(done, 10*time.Second).Should(Receive(BeZero()))
		}
		return job, &released, end
	}

	t.Run("not after each job", func(t *testing.T) {
		g := NewWithT(t)
		job, released, end := serve(g, time.Hour)
		for range 20 {
			job()
		}
		end()
		g.Expect(released.Load()).To(BeZero())
	})

	t.Run("once idle", func(t *testing.T) {
		g := NewWithT(t)
		job, released, end := serve(g, 20*time.Millisecond)
		job()
		g.Eventually(released.Load, 10*time.Second, 5*time.Millisecond).Should(Equal(int64(1)))
		job()
		g.Eventually(released.Load, 10*time.Second, 5*time.Millisecond).Should(Equal(int64(2)), "and again after the next job")
		end()
	})
}
