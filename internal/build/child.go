package build

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"sigs.k8s.io/kustomize/api/resmap"

	"github.com/windlass-dev/windlass/internal/isolate"
)

// Defaults of a Builder's limits.
const (
	// DefaultInProcess is the input, in bytes, up to which a build runs in
	// this process: a few hundred objects, built in well under a second.
	DefaultInProcess = 32 << 10
	// DefaultMemory is the memory one build process may use.
	DefaultMemory = 256 << 20
	// DefaultOutput is the size the built documents of one build may
	// reach together.
	DefaultOutput = 64 << 20
	// DefaultConcurrency is how many build processes run at once.
	DefaultConcurrency = 2
	// DefaultTime is the most time one build may take in its process.
	DefaultTime = 5 * time.Minute
)

// childRole names the build process to isolate.Serve.
const childRole = "kustomize-build"

// Limits bound the builds of a Builder.
type Limits struct {
	// InProcess is the input, in bytes (the kustomization files and the
	// files they reach, a base counted each time it is included), up to
	// which a build runs in this process, one at a time as kustomize
	// requires; larger ones run in a process of their own, where they can
	// be ended. Zero takes the default; a negative value sends every build
	// to a process of its own.
	InProcess int64
	// Limits bound the build processes: Memory and Output each, Time each
	// build whatever its context allows, Concurrency how many run at once.
	// Zero fields take the defaults.
	isolate.Limits
}

// defaults are the limits of the build processes that set none.
var defaults = isolate.Limits{Memory: DefaultMemory, Output: DefaultOutput, Concurrency: DefaultConcurrency, Time: DefaultTime}

// Errors of a build that went past its limits.
var (
	// ErrMemory is returned when a build needed more memory than its
	// limit.
	ErrMemory = errors.New("the kustomize build needed more memory than it may use")
	// ErrOutput is returned when the built documents are larger than the
	// limit.
	ErrOutput = errors.New("the kustomize build's output is larger than it may be")
	// ErrTimeout is returned when a build did not end in its time.
	ErrTimeout = errors.New("the kustomize build did not end in time")
)

// Builder runs builds: small ones in this process, large ones in child
// processes bounded in memory, output and time, so that no build holds
// the process's one kustomize run for long.
type Builder struct {
	inProcess int64
	turns     *isolate.Turns
}

// NewBuilder returns a Builder whose builds keep within limits (their
// zero fields take the defaults) and start their processes from pool,
// which they may share with other work; nil stands for a pool of their
// own.
func NewBuilder(limits Limits, pool *isolate.Pool) *Builder {
	if limits.InProcess == 0 {
		limits.InProcess = DefaultInProcess
	}
	errs := isolate.Errors{Memory: ErrMemory, Output: ErrOutput, Timeout: ErrTimeout}
	return &Builder{inProcess: limits.InProcess, turns: isolate.NewTurns(childRole, limits.Limits.Or(defaults), errs, pool)}
}

// Build is the package's BuildDocuments, in this process when the build's
// input is small and in a child process otherwise; a build in a child
// process ends when ctx does, or when the limits' time is up.
func (b *Builder) Build(ctx context.Context, root, path string, opts Options) (*Documents, error) {
	p, err := prepare(root, path, opts)
	if err != nil {
		return nil, err
	}
	if b.inProcess >= 0 && p.input <= b.inProcess {
		m, err := p.build()
		if err != nil {
			return nil, err
		}
		return documentsOf(m), nil
	}
	docs, err := b.inChild(ctx, buildRequest{Root: root, Path: path, Options: opts})
	if err != nil {
		if !errors.As(err, new(*childError)) {
			err = fmt.Errorf("kustomize build of %q: %w", path, err)
		}
		return nil, err
	}
	return FromYAML(docs), nil
}

// childError is an error of a build itself, as its process told it.
type childError struct {
	msg string
}

func (e *childError) Error() string { return e.msg }

// buildRequest is what the parent sends a build process.
type buildRequest struct {
	Root    string  `json:"root"`
	Path    string  `json:"path"`
	Options Options `json:"options"`
}

// buildReply is what a build process sends its parent: that it has the
// request, then the documents built or the error of the build.
type buildReply struct {
	Started   bool     `json:"started,omitempty"`
	Documents [][]byte `json:"documents,omitempty"`
	Error     string   `json:"error,omitempty"`
}

// inChild runs req in a build process; the errors of the build itself
// come back as they are.
func (b *Builder) inChild(ctx context.Context, req buildRequest) ([][]byte, error) {
	proc, err := b.turns.Start(ctx, 0)
	if err != nil {
		return nil, err
	}
	reply, talkErr := talk(req, proc)
	endErr := proc.End(talkErr != nil)
	switch {
	case endErr != nil && !errors.As(endErr, new(*isolate.ExitError)):
		return nil, endErr
	case talkErr == nil && reply.Error != "":
		return nil, &childError{msg: reply.Error}
	case endErr != nil:
		return nil, fmt.Errorf("the build process failed: %w", errors.Unwrap(endErr))
	case talkErr != nil:
		return nil, fmt.Errorf("reading from the build process: %w", talkErr)
	}
	return reply.Documents, nil
}

// talk sends req to the build process and reads its reply.
func talk(req buildRequest, proc *isolate.Process) (buildReply, error) {
	if err := json.NewEncoder(proc.In).Encode(req); err != nil {
		return buildReply{}, fmt.Errorf("sending the build: %w", err)
	}
	dec := json.NewDecoder(proc.Out)
	var reply buildReply
	if err := dec.Decode(&reply); err != nil || !reply.Started {
		return buildReply{}, fmt.Errorf("the build process did not start: %w", err)
	}
	proc.Started()
	reply = buildReply{}
	err := dec.Decode(&reply)
	return reply, err
}

func init() {
	isolate.Serve(childRole, serveBuild)
}

// serveBuild is the whole life of a build process: it builds what it
// reads from in and writes the outcome to out.
func serveBuild(in io.Reader, out io.Writer) int {
	var req buildRequest
	if err := json.NewDecoder(in).Decode(&req); err != nil {
		fmt.Fprintln(os.Stderr, "reading the request:", err)
		return 1
	}
	enc := json.NewEncoder(out)
	if err := enc.Encode(buildReply{Started: true}); err != nil {
		fmt.Fprintln(os.Stderr, "writing to the parent:", err)
		return 1
	}
	reply := buildReply{}
	p, err := prepare(req.Root, req.Path, req.Options)
	if err == nil {
		var m resmap.ResMap
		if m, err = p.build(); err == nil {
			reply.Documents, err = documents(m)
		}
	}
	if err != nil {
		reply.Error = err.Error()
	}
	if err := enc.Encode(reply); err != nil {
		fmt.Fprintln(os.Stderr, "writing the result:", err)
		return 1
	}
	return 0
}
