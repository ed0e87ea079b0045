package testutil

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

// LeakRounds is how many times ExpectNoLeaks runs an operation after its
// warm-up round.
const LeakRounds = 10

// LeakSlack is how many open files, and how many goroutines, may be left
// above the baseline. It absorbs what the process rightly starts on its own
// while the rounds run (a runtime or library goroutine started lazily, a
// test server's connection still being torn down when the count is read)
// and cannot hide a leak: an operation that leaks one file or goroutine a
// round leaves LeakRounds of them, more than the slack.
const LeakSlack = 4

// memoryLimit is the heap at which the garbage collector, off while
// ExpectNoLeaks runs, runs anyway.
const memoryLimit = 1 << 30

// OpenFiles returns how many file descriptors the process holds (the
// entries of /proc/self/fd, the one ReadDir opens included).
func OpenFiles(g Gomega) int {
	entries, err := os.ReadDir("/proc/self/fd")
	g.Expect(err).NotTo(HaveOccurred())
	return len(entries)
}

// ExpectNoLeaks (security row 44) proves that round leaves no file or
// goroutine open: it runs round once to warm up (connection pools, lazily
// started goroutines), counts the open files and goroutines of the
// process, runs round LeakRounds more times, then waits up to 10s (polling,
// never a fixed sleep) until both counts are back to at most the baseline
// plus LeakSlack. The garbage collector is off meanwhile, so that no
// finalizer closes a file that was left open. On failure the message lists the open files and the
// goroutines' stacks.
//
// settle, when given, runs before every count: it closes what a caller
// rightly keeps open between operations, the idle connections of a shared
// pool, so that only what the operations hold on to is counted. A
// connection that was never given back to its pool (a body left unclosed)
// is not idle, and stays counted.
//
// The counts are of the whole process: the test must not run beside
// parallel tests (no t.Parallel in it, and none of its own subtests
// running in parallel).
func ExpectNoLeaks(t testing.TB, g Gomega, round func(), settle ...func()) {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skip("counts descriptors in /proc/self/fd")
	}
	settleAll := func() {
		for _, s := range settle {
			s()
		}
	}
	// A file left open but no longer referenced is closed by its
	// finalizer once the garbage collector runs: with the collector off
	// (unless the heap nears memoryLimit), such a file stays counted.
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(memoryLimit))
	round()
	settleAll()
	files, goroutines := OpenFiles(g), runtime.NumGoroutine()
	for range LeakRounds {
		round()
	}
	g.Eventually(func() int {
		settleAll()
		return OpenFiles(g)
	}, 10*time.Second, 100*time.Millisecond).Should(BeNumerically("<=", files+LeakSlack), func() string {
		return fmt.Sprintf("%d rounds later the process holds more open files than the %d before them:\n%s",
			LeakRounds, files, describeFiles())
	})
	g.Eventually(func() int {
		settleAll()
		return runtime.NumGoroutine()
	}, 10*time.Second, 100*time.Millisecond).Should(BeNumerically("<=", goroutines+LeakSlack), func() string {
		return fmt.Sprintf("%d rounds later the process runs more goroutines than the %d before them:\n%s",
			LeakRounds, goroutines, describeGoroutines())
	})
}

// describeFiles lists what each open file descriptor points to.
func describeFiles() string {
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return err.Error()
	}
	var b strings.Builder
	for _, e := range entries {
		target, err := os.Readlink(filepath.Join("/proc/self/fd", e.Name()))
		if err != nil {
			target = err.Error()
		}
		fmt.Fprintf(&b, "  %s -> %s\n", e.Name(), target)
	}
	return b.String()
}

// describeGoroutines returns the stacks of the goroutines, grouped.
func describeGoroutines() string {
	var b strings.Builder
	if err := pprof.Lookup("goroutine").WriteTo(&b, 1); err != nil {
		return err.Error()
	}
	return b.String()
}
