package isolate

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sync/semaphore"
)

// startupTimeout bounds the start of a child, until it has its input: the
// time of this binary starting on a loaded machine, not of the work.
const startupTimeout = time.Minute

// outputSlack is what a child's protocol may add to the output it carries.
const outputSlack = 1 << 20

// retireTimeout is how long an idle child may take to exit once told to.
const retireTimeout = 5 * time.Second

// maxJobs is the most jobs one child does before it is ended, so that
// what its runtime keeps from one job to the next stays small.
const maxJobs = 100

// Errors of a child that a limit or its context ended.
var (
	// ErrMemory: the child needed more memory than its limit.
	ErrMemory = errors.New("the child process needed more memory than it may use")
	// ErrOutput: the child wrote more than its limit.
	ErrOutput = errors.New("the child process wrote more than it may")
	// ErrTime: the child did not end its work in its time.
	ErrTime = errors.New("the child process did not end in time")
	// ErrStartup: the child did not take its input in startupTimeout.
	ErrStartup = errors.New("the child process did not start in time")
)

// DefaultPoolMemory is the memory a Pool's children use together by
// default: two of 256 MiB.
const DefaultPoolMemory = 512 << 20

// Pool bounds the memory of the children it starts, together.
type Pool struct {
	total int64
	free  *semaphore.Weighted

	mu sync.Mutex
	// turns are the Turns whose idle children hold memory of the pool.
	turns []*Turns
	// waiting counts the Starts waiting for memory: a child whose job
	// ends then exits rather than wait for its next.
	waiting atomic.Int64
}

// NewPool returns a Pool whose children use at most total bytes together.
func NewPool(total int64) *Pool {
	return &Pool{total: total, free: semaphore.NewWeighted(total)}
}

// Total returns the memory the pool's children may use together.
func (p *Pool) Total() int64 { return p.total }

// Job is one child to start.
type Job struct {
	// Role names the child's work, as registered with Serve.
	Role string
	// Memory is the most memory the child may use, in bytes.
	Memory int64
	// Output is the most bytes the work's answer may hold (its protocol
	// may add a little).
	Output int64
	// Time is the most time the work may take, counted from Started.
	Time time.Duration
}

// Process is a started child. Write its input to In, read its answer from
// Out, call Started when it says it has its input, then End.
//
// A child of Turns may do one job after another: End without kill, once
// the answer was read in full, hands it back to its Turns, and its next
// Start gives it the next job (see Turns).
type Process struct {
	// In is the child's standard input.
	In io.WriteCloser
	// Out is the child's standard output, cut after the job's Output.
	Out io.Reader

	cmd    *exec.Cmd
	stdout *os.File
	stderr *headBuffer
	memory int64
	// exited is closed once the child has exited; waitErr then says how.
	exited  chan struct{}
	waitErr error
	release func()
	// explain, when set, turns the errors of End into the work's own.
	explain func(error) error
	// reuse, when set, takes back a child whose job ended well.
	reuse func(*Process)
	jobs  int

	// The current job.
	ctx       context.Context
	job       Job
	out       *countingReader
	clock     *clock
	stopWatch func() bool
	cancelled atomic.Bool
}

// Start starts a child for job once the pool has its memory free. It
// waits for that until ctx ends, and the child is killed when ctx ends.
func (p *Pool) Start(ctx context.Context, job Job) (*Process, error) {
	if job.Memory > p.total {
		return nil, fmt.Errorf("a child process of %d MiB does not fit in the %d MiB that child processes may use together", job.Memory>>20, p.total>>20)
	}
	if !p.free.TryAcquire(job.Memory) {
		// Children waiting for work give their memory back first, and
		// those whose job ends meanwhile do not wait for another.
		p.waiting.Add(1)
		p.retireIdle()
		err := p.free.Acquire(ctx, job.Memory)
		p.waiting.Add(-1)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrTime, err)
		}
	}
	proc, err := start(job)
	if err != nil {
		p.free.Release(job.Memory)
		return nil, err
	}
	proc.release = func() { p.free.Release(job.Memory) }
	proc.begin(ctx, job)
	return proc, nil
}

// register makes the idle children of t give their memory back when the
// pool runs short.
func (p *Pool) register(t *Turns) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.turns = append(p.turns, t)
}

// retireIdle ends the idle children of every Turns of the pool.
func (p *Pool) retireIdle() {
	p.mu.Lock()
	turns := slices.Clone(p.turns)
	p.mu.Unlock()
	for _, t := range turns {
		t.retireIdle()
	}
}

// start starts the child process of job, which waits for its first job.
func start(job Job) (*Process, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("finding the executable to start: %w", err)
	}
	// Not tied to a context: each job's context ends that job (begin).
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), envRole+"="+job.Role, envMemory+"="+strconv.FormatInt(job.Memory, 10),
		envParent+"="+strconv.Itoa(os.Getpid()), "GOMAXPROCS=1")
	cmd.WaitDelay = 5 * time.Second
	stderr := &headBuffer{max: 4096}
	cmd.Stderr = stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	// A pipe of its own rather than StdoutPipe's, which Wait closes: the
	// child is waited for while its answer is read.
	stdout, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	cmd.Stdout = w
	err = cmd.Start()
	w.Close()
	if err != nil {
		stdout.Close()
		return nil, fmt.Errorf("starting a child process: %w", err)
	}
	p := &Process{In: stdin, cmd: cmd, stdout: stdout, stderr: stderr, memory: job.Memory, exited: make(chan struct{})}
	go func() {
		p.waitErr = cmd.Wait()
		close(p.exited)
	}()
	return p, nil
}

// begin starts job on the child: its output counted afresh, its clocks,
// and its context, whose end kills the child.
func (p *Process) begin(ctx context.Context, job Job) {
	p.ctx, p.job = ctx, job
	p.jobs++
	p.out = &countingReader{r: io.LimitReader(p.stdout, job.Output+outputSlack)}
	p.Out = p.out
	p.clock = startClock(p.cmd.Process, job.Time)
	p.cancelled.Store(false)
	p.stopWatch = context.AfterFunc(ctx, func() {
		p.cancelled.Store(true)
		_ = p.cmd.Process.Kill()
	})
}

// Started starts the clock of the work: the child has its input.
func (p *Process) Started() { p.clock.started() }

// End ends the job, killing the child first when kill is true (the parent
// gave up on it). A child of Turns whose job ended well (not killed, within
// its limits, alive) goes back to its Turns for the next job, and End
// returns nil. Otherwise End waits for the child to exit and frees its
// memory in the pool. It returns why the child ended when a limit or the
// context ended it (ErrStartup, ErrTime, ErrMemory, ErrOutput; ErrTime
// with the context's error), otherwise the child's own failure (an
// *ExitError), or nil when it exited well or was killed here. A child of
// Turns gets its work's own errors for the limits instead.
func (p *Process) End(kill bool) error {
	if !kill && p.reuse != nil && p.healthy() && p.stopWatch() {
		p.clock.stop()
		if p.clock.expired() == clockRunning {
			p.reuse(p)
			return nil
		}
	}
	// The clocks and the context run until the child has exited.
	defer p.release()
	defer p.clock.stop()
	defer p.stopWatch()
	err := p.end(kill)
	if p.explain != nil && err != nil && !errors.As(err, new(*ExitError)) {
		return p.explain(err)
	}
	return err
}

// retire ends an idle child: it exits once its input is closed.
func (p *Process) retire() {
	defer idlePIDs.Delete(p.cmd.Process.Pid)
	defer p.release()
	_ = p.In.Close()
	select {
	case <-p.exited:
	case <-time.After(retireTimeout):
		_ = p.cmd.Process.Kill()
		<-p.exited
	}
	_ = p.stdout.Close()
}

// healthy tells whether the child can take another job: alive, its clocks
// and context never ran out, its output within its limit.
func (p *Process) healthy() bool {
	select {
	case <-p.exited:
		return false
	default:
	}
	return p.clock.expired() == clockRunning && !p.cancelled.Load() && p.ctx.Err() == nil &&
		p.out.n < p.job.Output+outputSlack && p.jobs < maxJobs
}

// end waits for the child and says why it ended.
func (p *Process) end(kill bool) error {
	if kill {
		_ = p.cmd.Process.Kill()
	}
	_ = p.In.Close()
	<-p.exited
	_ = p.stdout.Close()
	waitErr := p.waitErr
	switch {
	case p.cancelled.Load() || p.ctx.Err() != nil:
		return fmt.Errorf("%w: %w", ErrTime, context.Cause(p.ctx))
	case p.clock.expired() == clockStartup:
		return fmt.Errorf("%w (%s)", ErrStartup, startupTimeout)
	case p.clock.expired() == clockWork:
		return fmt.Errorf("%w (%s)", ErrTime, p.job.Time)
	case exitCode(waitErr) == exitMemory || strings.Contains(p.stderr.String(), "out of memory"):
		return fmt.Errorf("%w (%d MiB)", ErrMemory, p.memory>>20)
	case p.out.n >= p.job.Output+outputSlack:
		return fmt.Errorf("%w (%d MiB)", ErrOutput, p.job.Output>>20)
	case waitErr != nil && !(kill && killed(waitErr)):
		return &ExitError{Err: waitErr, Stderr: firstLine(strings.TrimSpace(p.stderr.String()))}
	}
	return nil
}

// ExitError is a child that failed on its own.
type ExitError struct {
	// Err is how it exited.
	Err error
	// Stderr is the first line it wrote to its standard error.
	Stderr string
}

// Error describes the failure.
func (e *ExitError) Error() string {
	if e.Stderr != "" {
		return fmt.Sprintf("the child process failed: %v: %s", e.Err, e.Stderr)
	}
	return fmt.Sprintf("the child process failed: %v", e.Err)
}

// Unwrap returns how the child exited.
func (e *ExitError) Unwrap() error { return e.Err }

// killed reports whether err is the exit of a process killed by SIGKILL.
func killed(err error) bool {
	var exit *exec.ExitError
	if !errors.As(err, &exit) {
		return false
	}
	status, ok := exit.Sys().(syscall.WaitStatus)
	return ok && status.Signaled() && status.Signal() == syscall.SIGKILL
}

// exitCode returns the exit code in err, or -1.
func exitCode(err error) int {
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return exit.ExitCode()
	}
	return -1
}

// firstLine returns the first line of s.
func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// countingReader counts what it reads.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// headBuffer keeps the first max bytes written to it: where the Go
// runtime says why it stopped.
type headBuffer struct {
	max int
	buf bytes.Buffer
}

func (h *headBuffer) Write(p []byte) (int, error) {
	if room := h.max - h.buf.Len(); room > 0 {
		h.buf.Write(p[:min(room, len(p))])
	}
	return len(p), nil
}

func (h *headBuffer) String() string { return h.buf.String() }
