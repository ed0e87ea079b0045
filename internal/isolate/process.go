package isolate

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sync/semaphore"
)

// startupTimeout bounds the start of a child, until it has its input: the
// time of this binary starting on a loaded machine, not of the work.
const startupTimeout = time.Minute

// outputSlack is what a child's protocol may add to the output it carries.
const outputSlack = 1 << 20

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
type Process struct {
	// In is the child's standard input.
	In io.WriteCloser
	// Out is the child's standard output, cut after the job's Output.
	Out io.Reader

	ctx     context.Context
	cmd     *exec.Cmd
	job     Job
	out     *countingReader
	stderr  *headBuffer
	clock   *clock
	release func()
	// explain, when set, turns the errors of End into the work's own.
	explain func(error) error
}

// Start starts a child for job once the pool has its memory free. It
// waits for that until ctx ends, and the child is killed when ctx ends.
func (p *Pool) Start(ctx context.Context, job Job) (*Process, error) {
	if job.Memory > p.total {
		return nil, fmt.Errorf("a child process of %d MiB does not fit in the %d MiB that child processes may use together", job.Memory>>20, p.total>>20)
	}
	if err := p.free.Acquire(ctx, job.Memory); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrTime, err)
	}
	proc, err := start(ctx, job)
	if err != nil {
		p.free.Release(job.Memory)
		return nil, err
	}
	proc.release = func() { p.free.Release(job.Memory) }
	return proc, nil
}

// start starts the child process of job.
func start(ctx context.Context, job Job) (*Process, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("finding the executable to start: %w", err)
	}
	cmd := exec.CommandContext(ctx, exe)
	cmd.Env = append(os.Environ(), envRole+"="+job.Role, envMemory+"="+strconv.FormatInt(job.Memory, 10),
		envParent+"="+strconv.Itoa(os.Getpid()), "GOMAXPROCS=1")
	cmd.WaitDelay = 5 * time.Second
	stderr := &headBuffer{max: 4096}
	cmd.Stderr = stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting a child process: %w", err)
	}
	out := &countingReader{r: io.LimitReader(stdout, job.Output+outputSlack)}
	return &Process{In: stdin, Out: out, ctx: ctx, cmd: cmd, job: job, out: out, stderr: stderr,
		clock: startClock(cmd.Process, job.Time)}, nil
}

// Started starts the clock of the work: the child has its input.
func (p *Process) Started() { p.clock.started() }

// End waits for the child to exit, killing it first when kill is true
// (the parent gave up on it), and frees its memory in the pool. It returns
// why the child ended when a limit or the context ended it (ErrStartup,
// ErrTime, ErrMemory, ErrOutput; ErrTime with the context's error),
// otherwise the child's own failure (an *ExitError), or nil when it exited
// well or was killed here. A child of Turns gets its work's own errors
// for the limits instead.
func (p *Process) End(kill bool) error {
	defer p.release()
	defer p.clock.stop()
	err := p.end(kill)
	if p.explain != nil && err != nil && !errors.As(err, new(*ExitError)) {
		return p.explain(err)
	}
	return err
}

// end waits for the child and says why it ended.
func (p *Process) end(kill bool) error {
	if kill {
		_ = p.cmd.Process.Kill()
	}
	_ = p.In.Close()
	waitErr := p.cmd.Wait()
	switch {
	case p.ctx.Err() != nil:
		return fmt.Errorf("%w: %w", ErrTime, p.ctx.Err())
	case p.clock.expired() == clockStartup:
		return fmt.Errorf("%w (%s)", ErrStartup, startupTimeout)
	case p.clock.expired() == clockWork:
		return fmt.Errorf("%w (%s)", ErrTime, p.job.Time)
	case exitCode(waitErr) == exitMemory || strings.Contains(p.stderr.String(), "out of memory"):
		return fmt.Errorf("%w (%d MiB)", ErrMemory, p.job.Memory>>20)
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
