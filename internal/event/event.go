// Package event is the one path by which Windlass reconcilers tell users
// what happened to an object: a Kubernetes event, typed, redacted and never
// empty, and the same event, with the revision it concerns and metadata, to
// a Sink (the notification controller forwards events to providers through
// one).
//
// Events are for users; logs are for operators. A message goes through
// redact.String before it leaves the process, so a credential in a URL or
// an error never reaches an event.
package event

import (
	"context"
	"reflect"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/windlass-dev/windlass/internal/redact"
)

// Types of events, as Kubernetes spells them.
const (
	// TypeNormal is an event about progress or success.
	TypeNormal = corev1.EventTypeNormal
	// TypeWarning is an event about a failure.
	TypeWarning = corev1.EventTypeWarning
)

// Event is one thing that happened to an object.
type Event struct {
	// Type is TypeNormal or TypeWarning.
	Type string
	// Reason is a short UpperCamelCase cause, usually a condition reason.
	Reason string
	// Message is what users read; it is redacted before it is recorded.
	Message string
	// Revision is the source revision the event concerns, if any.
	Revision string
	// Metadata is more context for forwarders, such as a token or a
	// summary; values are redacted too.
	Metadata map[string]string
}

// Sink receives every event a Recorder records, for forwarding; the
// Kubernetes event is recorded whatever the sink does.
type Sink interface {
	Forward(ctx context.Context, obj client.Object, e Event)
}

// Tee returns a Sink that forwards to each of sinks that is not nil, or
// nil when none is.
func Tee(sinks ...Sink) Sink {
	var out tee
	for _, s := range sinks {
		if s != nil && !isNilPointer(s) {
			out = append(out, s)
		}
	}
	switch len(out) {
	case 0:
		return nil
	case 1:
		return out[0]
	}
	return out
}

// tee forwards to several sinks.
type tee []Sink

// Forward forwards e to every sink.
func (t tee) Forward(ctx context.Context, obj client.Object, e Event) {
	for _, s := range t {
		s.Forward(ctx, obj, e)
	}
}

// isNilPointer reports whether s is a typed nil pointer.
func isNilPointer(s Sink) bool {
	v := reflect.ValueOf(s)
	return v.Kind() == reflect.Pointer && v.IsNil()
}

// Recorder records events about objects of one controller.
type Recorder struct {
	// Kubernetes records the Kubernetes events; nil records none.
	Kubernetes events.EventRecorder
	// Sink, when set, receives every event too.
	Sink Sink
}

// Action is the Kubernetes event action of every event: reconciling is
// all that Windlass controllers do.
const Action = "Reconcile"

// Record records e about obj. An event with an empty message is dropped:
// it would tell users nothing. One that repeats the type and reason of an
// event about obj recorded earlier in the same run (see WithRun) goes to
// the Sink only.
func (r *Recorder) Record(ctx context.Context, obj client.Object, e Event) {
	if r == nil || e.Message == "" {
		return
	}
	run, inRun := ctx.Value(runKey{}).(*runEvents)
	toKubernetes := r.Kubernetes != nil && (!inRun || run.first(obj, e))
	e = redacted(e)
	if toKubernetes {
		r.Kubernetes.Eventf(obj, nil, e.Type, e.Reason, Action, "%s", e.Message)
	}
	if r.Sink != nil {
		r.Sink.Forward(ctx, obj, e)
	}
}

// Forward gives e about obj to the Sink only, redacted as Record does: for
// news that the object's status already tells users, which a Kubernetes
// event (an API request) need not repeat, and that alerts must still hear.
// An event with an empty message is dropped.
func (r *Recorder) Forward(ctx context.Context, obj client.Object, e Event) {
	if r == nil || r.Sink == nil || e.Message == "" {
		return
	}
	r.Sink.Forward(ctx, obj, redacted(e))
}

// redacted returns e with its message and metadata redacted.
func redacted(e Event) Event {
	e.Message = redact.String(e.Message)
	if e.Metadata != nil {
		out := make(map[string]string, len(e.Metadata))
		for k, v := range e.Metadata {
			out[k] = redact.String(v)
		}
		e.Metadata = out
	}
	return e
}

// Normal records a Normal event about obj for revision.
func (r *Recorder) Normal(ctx context.Context, obj client.Object, reason, revision, message string) {
	r.Record(ctx, obj, Event{Type: TypeNormal, Reason: reason, Revision: revision, Message: message})
}

// Warning records a Warning event about obj for revision.
func (r *Recorder) Warning(ctx context.Context, obj client.Object, reason, revision, message string) {
	r.Record(ctx, obj, Event{Type: TypeWarning, Reason: reason, Revision: revision, Message: message})
}

// WithRun returns a context for one run of a reconciler, under which the
// Recorder records one Kubernetes event per object, type and reason; the
// Sink still gets every event (a recovery's event, after an applied
// revision's of the same reason, resolves an alert). Kubernetes keys events
// by object version, type and reason, not by message: a second such event
// in one run would only count in a series of the first, its message lost,
// written by a request that races the first and, when it loses, retries
// seconds later, long after the run.
func WithRun(ctx context.Context) context.Context {
	return context.WithValue(ctx, runKey{}, &runEvents{})
}

type runKey struct{}

// runEvents is what one run recorded, by object, type and reason.
type runEvents struct {
	mu   sync.Mutex
	seen map[runEvent]bool
}

type runEvent struct {
	uid                    types.UID
	namespace, name        string
	eventType, eventReason string
}

// first reports whether e is the first event of its type and reason about
// obj in the run, and notes it.
func (r *runEvents) first(obj client.Object, e Event) bool {
	key := runEvent{uid: obj.GetUID(), namespace: obj.GetNamespace(), name: obj.GetName(),
		eventType: e.Type, eventReason: e.Reason}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.seen[key] {
		return false
	}
	if r.seen == nil {
		r.seen = map[runEvent]bool{}
	}
	r.seen[key] = true
	return true
}
