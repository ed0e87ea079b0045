package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"helm.sh/helm/v4/pkg/chart/common"
	chart "helm.sh/helm/v4/pkg/chart/v2"

	"github.com/windlass-dev/windlass/internal/isolate"
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

// Limits bound each render of a Renderer: Memory and Output each render
// process, Concurrency the processes at once, Time each render once its
// process has the chart, whatever the Request's Timeout. Zero fields take
// the defaults.
type Limits = isolate.Limits

// defaults are the limits of renders that set none.
var defaults = Limits{Memory: DefaultMemory, Output: DefaultOutput, Concurrency: DefaultConcurrency, Time: DefaultTime}

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
	turns *isolate.Turns
}

// New returns a Renderer whose renders keep within limits (their zero
// fields take the defaults) and start their processes from pool, which
// they may share with other work; nil stands for a pool of their own.
func New(limits Limits, pool *isolate.Pool) *Renderer {
	errs := isolate.Errors{Memory: ErrMemory, Output: ErrOutput, Timeout: ErrTimeout}
	return &Renderer{turns: isolate.NewTurns(childRole, limits.Or(defaults), errs, pool)}
}

// Limits returns the limits of r's renders.
func (r *Renderer) Limits() Limits {
	return r.turns.Limits()
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
	return r.run(ctx, msg, req.Lookup, req.Timeout)
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
	return &request{Chart: wc, Values: values, Release: req.Release, Capabilities: caps, Lookup: req.Lookup != nil, Output: r.Limits().Output}, nil
}

// run starts a child, serves its lookups and reads what it rendered, in
// timeout from when the child has the chart.
func (r *Renderer) run(ctx context.Context, msg *request, lookup LookupFunc, timeout time.Duration) (map[string]string, error) {
	proc, err := r.turns.Start(ctx, timeout)
	if err != nil {
		return nil, err
	}
	rendered, serveErr := serve(msg, json.NewEncoder(proc.In), json.NewDecoder(proc.Out), lookup, r.Limits().Output, proc.Started)
	endErr := proc.End(serveErr != nil)
	var rendering *renderError
	switch {
	case endErr != nil && !errors.As(endErr, new(*isolate.ExitError)):
		return nil, endErr
	case errors.As(serveErr, &rendering) && rendering.output:
		return nil, fmt.Errorf("%w (%d MiB)", ErrOutput, r.Limits().Output>>20)
	case rendering != nil:
		return nil, rendering
	case endErr != nil:
		return nil, fmt.Errorf("the render process failed: %w", errors.Unwrap(endErr))
	case serveErr != nil:
		return nil, fmt.Errorf("reading from the render process: %w", serveErr)
	}
	return rendered, nil
}

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
