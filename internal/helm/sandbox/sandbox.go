package sandbox

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"helm.sh/helm/v4/pkg/chart/common"
	chart "helm.sh/helm/v4/pkg/chart/v2"
)

// Defaults of a Renderer's limits.
const (
	// DefaultMemory is the memory one render process may use.
	DefaultMemory = 256 << 20
	// DefaultOutput is the size the files of one render may reach
	// together.
	DefaultOutput = 32 << 20
	// DefaultConcurrency is how many render processes run at once.
	DefaultConcurrency = 2
	// DefaultTime is the most time one render may take: far more than
	// any chart written to be installed needs.
	DefaultTime = time.Minute
)

// startupTimeout bounds the start of a child, until it has the chart: the
// time of this binary starting on a loaded machine, not of the chart.
const startupTimeout = time.Minute

// Errors of a render that went past its limits.
var (
	// ErrMemory is returned when a render needed more memory than its
	// limit.
	ErrMemory = errors.New("rendering the chart needed more memory than it may use")
	// ErrOutput is returned when the rendered files are larger than the
	// limit.
	ErrOutput = errors.New("the rendered manifests are larger than they may be")
	// ErrTimeout is returned when the render did not end before its
	// deadline.
	ErrTimeout = errors.New("rendering the chart did not end in time")
)

// Limits bound each render of a Renderer.
type Limits struct {
	// Memory is the most memory a render process may use, in bytes.
	Memory int64
	// Output is the most bytes the rendered files may hold together.
	Output int64
	// Concurrency is how many render processes may run at once; others
	// wait for a turn.
	Concurrency int
	// Time is the most time a render may take once its process has the
	// chart, whatever the Request's Timeout, so that no chart holds a turn
	// for long.
	Time time.Duration
}

// MemoryAtOnce returns the most memory the render processes use together:
// Memory times Concurrency, the defaults standing for zero fields.
func (l Limits) MemoryAtOnce() int64 {
	l = l.withDefaults()
	return l.Memory * int64(l.Concurrency)
}

// withDefaults returns l with its zero fields set to the defaults.
func (l Limits) withDefaults() Limits {
	if l.Memory <= 0 {
		l.Memory = DefaultMemory
	}
	if l.Output <= 0 {
		l.Output = DefaultOutput
	}
	if l.Concurrency <= 0 {
		l.Concurrency = DefaultConcurrency
	}
	if l.Time <= 0 {
		l.Time = DefaultTime
	}
	return l
}

// LookupFunc answers a template's lookup call as Helm's lookup function
// does: the object or list found, or an empty map when there is none.
type LookupFunc func(apiVersion, kind, namespace, name string) (map[string]any, error)

// Request is one chart to render.
type Request struct {
	// Chart is the chart, with its dependencies.
	Chart *chart.Chart
	// Values are the values given to the release (not yet coalesced with
	// the chart's).
	Values map[string]any
	// Release is the release the templates see as .Release.
	Release common.ReleaseOptions
	// Capabilities are what the templates see as .Capabilities.
	Capabilities *common.Capabilities
	// Lookup answers the templates' lookup calls; when nil they find
	// nothing, as when Helm renders without a cluster.
	Lookup LookupFunc
	// Timeout is the time the templates may take to render, counted from
	// when the render process has the chart (not while it waits for its
	// turn or starts), within the Renderer's Limits.Time; zero means
	// Limits.Time.
	Timeout time.Duration
}

// Renderer renders charts in child processes.
type Renderer struct {
	limits     Limits
	slots      chan struct{}
	executable string
}

// New returns a Renderer whose renders keep within limits (their zero
// fields take the defaults).
func New(limits Limits) (*Renderer, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("finding the executable to render charts with: %w", err)
	}
	limits = limits.withDefaults()
	return &Renderer{limits: limits, slots: make(chan struct{}, limits.Concurrency), executable: exe}, nil
}

// Limits returns the limits of r's renders.
func (r *Renderer) Limits() Limits {
	return r.limits
}

// Render renders req's chart as Helm's engine does, in a child process
// that ends when ctx does, and returns the rendered files by their path
// (partials left out). A chart that needs more memory or writes more than
// the limits allow gets ErrMemory or ErrOutput; one still rendering when
// its time (req.Timeout within Limits.Time) is up, or when ctx ends, gets
// ErrTimeout.
func (r *Renderer) Render(ctx context.Context, req Request) (map[string]string, error) {
	if req.Chart == nil {
		return nil, errors.New("no chart given")
	}
	msg, err := r.request(req)
	if err != nil {
		return nil, err
	}
	select {
	case r.slots <- struct{}{}:
		defer func() { <-r.slots }()
	case <-ctx.Done():
		return nil, fmt.Errorf("%w: %w", ErrTimeout, ctx.Err())
	}
	return r.run(ctx, msg, req.Lookup, r.budget(req.Timeout))
}

// budget returns the time a render asked to end within timeout may take.
func (r *Renderer) budget(timeout time.Duration) time.Duration {
	if timeout <= 0 || timeout > r.limits.Time {
		return r.limits.Time
	}
	return timeout
}

// request returns what the child is sent for req.
func (r *Renderer) request(req Request) (*request, error) {
	wc, err := toWire(req.Chart)
	if err != nil {
		return nil, err
	}
	values, err := encodeValue(req.Values)
	if err != nil {
		return nil, fmt.Errorf("values: %w", err)
	}
	caps := req.Capabilities
	if caps == nil {
		caps = common.DefaultCapabilities
	}
	return &request{Chart: wc, Values: values, Release: req.Release, Capabilities: caps, Lookup: req.Lookup != nil, Output: r.limits.Output}, nil
}

// run starts a child, serves its lookups and reads what it rendered, in
// budget from when the child has the chart.
func (r *Renderer) run(ctx context.Context, msg *request, lookup LookupFunc, budget time.Duration) (map[string]string, error) {
	cmd := exec.CommandContext(ctx, r.executable)
	cmd.Env = append(os.Environ(), envChild+"=1", envMemory+"="+strconv.FormatInt(r.limits.Memory, 10),
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
		return nil, fmt.Errorf("starting the render process: %w", err)
	}
	clock := startClock(cmd.Process, budget)
	defer clock.stop()
	out := &countingReader{r: io.LimitReader(stdout, r.limits.Output+replySlack)}
	rendered, serveErr := serve(msg, json.NewEncoder(stdin), json.NewDecoder(out), lookup, r.limits.Output, clock.started)
	_ = stdin.Close()
	if serveErr != nil {
		_ = cmd.Process.Kill()
	}
	waitErr := cmd.Wait()
	switch {
	case ctx.Err() != nil:
		return nil, fmt.Errorf("%w: %w", ErrTimeout, ctx.Err())
	case clock.expired() == clockStartup:
		return nil, fmt.Errorf("the render process did not start within %s", startupTimeout)
	case clock.expired() == clockRender:
		return nil, fmt.Errorf("%w: the templates took longer than %s", ErrTimeout, budget)
	case exitCode(waitErr) == exitMemory || strings.Contains(stderr.String(), "out of memory"):
		return nil, fmt.Errorf("%w (%d MiB)", ErrMemory, r.limits.Memory>>20)
	case out.n >= r.limits.Output+replySlack:
		return nil, fmt.Errorf("%w (%d MiB)", ErrOutput, r.limits.Output>>20)
	case serveErr != nil:
		return nil, r.childFailed(serveErr, waitErr, stderr)
	}
	return rendered, nil
}

// childFailed describes a child that ended without an answer.
func (r *Renderer) childFailed(serveErr, waitErr error, stderr *headBuffer) error {
	var rendering *renderError
	if errors.As(serveErr, &rendering) {
		if rendering.output {
			return fmt.Errorf("%w (%d MiB)", ErrOutput, r.limits.Output>>20)
		}
		return rendering
	}
	if waitErr != nil {
		if tail := strings.TrimSpace(stderr.String()); tail != "" {
			return fmt.Errorf("the render process failed: %w: %s", waitErr, firstLine(tail))
		}
		return fmt.Errorf("the render process failed: %w", waitErr)
	}
	return fmt.Errorf("reading from the render process: %w", serveErr)
}

// replySlack is what the child's messages may add to the files they
// carry.
const replySlack = 1 << 20

// serve sends msg to the child, answers its lookups and returns what it
// rendered; started is called when the child says it has the chart.
func serve(msg *request, enc *json.Encoder, dec *json.Decoder, lookup LookupFunc, maxReply int64, started func()) (map[string]string, error) {
	if err := enc.Encode(msg); err != nil {
		return nil, fmt.Errorf("sending the chart: %w", err)
	}
	for {
		var m childMessage
		if err := dec.Decode(&m); err != nil {
			return nil, err
		}
		switch {
		case m.Started:
			started()
		case m.Lookup != nil:
			if err := enc.Encode(answer(m.Lookup, lookup, maxReply)); err != nil {
				return nil, fmt.Errorf("answering a lookup: %w", err)
			}
		case m.Error != "":
			return nil, &renderError{msg: m.Error, output: m.OutputExceeded}
		default:
			return m.Rendered, nil
		}
	}
}

// answer returns the reply to one lookup call.
func answer(call *lookupCall, lookup LookupFunc, maxReply int64) lookupReply {
	if lookup == nil {
		return lookupReply{Object: json.RawMessage("{}")}
	}
	obj, err := lookup(call.APIVersion, call.Kind, call.Namespace, call.Name)
	if err != nil {
		return lookupReply{Error: err.Error()}
	}
	raw, err := json.Marshal(obj)
	if err != nil {
		return lookupReply{Error: err.Error()}
	}
	if int64(len(raw)) > maxReply {
		return lookupReply{Error: fmt.Sprintf("lookup %s %s: the answer is larger than %d MiB", call.APIVersion, call.Kind, maxReply>>20)}
	}
	return lookupReply{Object: raw}
}

// renderError is an error the chart's templates gave.
type renderError struct {
	msg    string
	output bool
}

func (e *renderError) Error() string { return e.msg }

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
