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
	boundMemory(limit)
	if parent, err := strconv.Atoi(os.Getenv(envParent)); err == nil {
		go watchParent(parent)
	}
	os.Exit(serveJobs(bufio.NewReader(os.Stdin), os.Stdout, work))
}

// serveJobs runs work for each job that in brings, until in ends, and
// returns the exit code of the child.
func serveJobs(in *bufio.Reader, out io.Writer, work func(in io.Reader, out io.Writer) int) int {
	for {
		if _, err := in.Peek(1); err != nil {
			return 0 // the parent has no more work
		}
		if code := work(in, out); code != 0 {
			return code
		}
		// What the job held goes back to the system while the child
		// waits for the next.
		debug.FreeOSMemory()
	}
}

// boundMemory keeps the child within limit bytes: the collector works
// harder as it nears it, the child exits when it is passed, and the
// address space is capped a little above it so that one huge allocation
// fails at once. The kernel's OOM killer, if the container runs short
// anyway, takes the child first.
func boundMemory(limit int64) {
	debug.SetMemoryLimit(limit * 3 / 4)
	_ = os.WriteFile("/proc/self/oom_score_adj", []byte("1000"), 0)
	if size := addressSpace(); capAddressSpace && size > 0 {
		capped := uint64(size + limit + 64<<20)
		_ = syscall.Setrlimit(syscall.RLIMIT_AS, &syscall.Rlimit{Cur: capped, Max: capped})
	}
	go watchMemory(uint64(limit))
}

// watchMemory ends the child once the memory it holds passes limit.
func watchMemory(limit uint64) {
	samples := []metrics.Sample{{Name: "/memory/classes/total:bytes"}, {Name: "/memory/classes/heap/released:bytes"}}
	for range time.Tick(2 * time.Millisecond) {
		metrics.Read(samples)
		if samples[0].Value.Uint64()-samples[1].Value.Uint64() > limit {
			fmt.Fprintln(os.Stderr, "the child process went past its memory limit")
			os.Exit(exitMemory)
		}
	}
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
