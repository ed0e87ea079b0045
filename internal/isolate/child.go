package isolate

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// The environment of a child: envRole names the work it does, envMemory
// holds its memory limit in bytes, envParent the pid of the process it
// answers.
const (
	envRole   = "WINDLASS_CHILD"
	envMemory = "WINDLASS_CHILD_MEMORY"
	envParent = "WINDLASS_CHILD_PARENT"
)

// exitMemory is the exit code of a child that went past its memory limit.
const exitMemory = 3

// idleRelease is how long a child waits for its next job before it gives
// what its jobs held back to the system. Jobs that come one after another
// do not pay for it (a release collects the whole heap and the next job
// faults its pages in again: more CPU than a small job's work).
const idleRelease = time.Second

// Serve makes this process the child that does role's work, when the
// environment says it was started as one: it bounds the process's memory,
// watches its parent, and runs work on the standard input and output, one
// job after another, until the parent closes the input; it exits with
// work's exit code when that is not 0. Otherwise it returns at once. Call
// it from an init function of the package that does the work.
//
// work does one job: it reads the job's input and writes its whole
// answer, and must read nothing more (the parent sends the next job only
// once it has the answer). Nothing of one job may outlive it.
func Serve(role string, work func(in io.Reader, out io.Writer) int) {
	if os.Getenv(envRole) != role {
		return
	}
	limit, err := strconv.ParseInt(os.Getenv(envMemory), 10, 64)
	if err != nil || limit <= 0 {
		fmt.Fprintln(os.Stderr, "no memory limit given")
		os.Exit(1)
	}
	watch := boundMemory(limit)
	if parent, err := strconv.Atoi(os.Getenv(envParent)); err == nil {
		go watchParent(parent)
	}
	os.Exit(serveJobs(bufio.NewReader(os.Stdin), os.Stdout, work, watch.working, debug.FreeOSMemory, idleRelease))
}

// serveJobs runs work for each job that in brings, until in ends, and
// returns the exit code of the child. It tells working when each job
// starts and ends (from the first byte of its input on), and calls
// release (which gives the memory the jobs held back to the system) once
// the child has waited idle for the next job.
func serveJobs(in *bufio.Reader, out io.Writer, work func(in io.Reader, out io.Writer) int, working func(bool), release func(), idle time.Duration) int {
	releaseTimer := time.AfterFunc(idle, release)
	releaseTimer.Stop()
	for {
		if _, err := in.Peek(1); err != nil {
			return 0 // the parent has no more work
		}
		releaseTimer.Stop()
		working(true)
		code := work(in, out)
		working(false)
		if code != 0 {
			return code
		}
		releaseTimer.Reset(idle)
	}
}

// boundMemory keeps the child within limit bytes: the collector works
// harder as it nears it, the child exits when it is passed (checked while
// a job runs: see memoryWatch), and the address space is capped a little
// above it so that one huge allocation fails at once. The kernel's OOM
// killer, if the container runs short anyway, takes the child first.
func boundMemory(limit int64) *memoryWatch {
	debug.SetMemoryLimit(limit * 3 / 4)
	_ = os.WriteFile("/proc/self/oom_score_adj", []byte("1000"), 0)
	if size := addressSpace(); capAddressSpace && size > 0 {
		capped := uint64(size + limit + 64<<20)
		_ = syscall.Setrlimit(syscall.RLIMIT_AS, &syscall.Rlimit{Cur: capped, Max: capped})
	}
	watch := newMemoryWatch(func() bool { return heldMemory() > uint64(limit) }, func() {
		fmt.Fprintln(os.Stderr, "the child process went past its memory limit")
		os.Exit(exitMemory)
	})
	go watch.run()
	return watch
}

// heldMemory is the memory the Go runtime holds from the system, less
// what it has given back.
func heldMemory() uint64 {
	samples := []metrics.Sample{{Name: "/memory/classes/total:bytes"}, {Name: "/memory/classes/heap/released:bytes"}}
	metrics.Read(samples)
	return samples[0].Value.Uint64() - samples[1].Value.Uint64()
}

// watchParent ends the child once its parent is no longer ppid (it was
// killed before it could end the child, or was gone before the child
// looked): work must not outlive the process that waits for it.
func watchParent(ppid int) {
	if os.Getppid() != ppid {
		os.Exit(1)
	}
	for range time.Tick(100 * time.Millisecond) {
		if os.Getppid() != ppid {
			os.Exit(1)
		}
	}
}

// addressSpace returns the size of the child's address space now, in
// bytes, or 0 when it cannot be read.
func addressSpace() int64 {
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(status), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmSize:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			if err != nil {
				return 0
			}
			return kb << 10
		}
	}
	return 0
}
