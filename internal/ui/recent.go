package ui

import (
	"context"
	"net/http"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"github.com/windlass-dev/windlass/internal/event"
)

// maxEventMessage bounds the message of an event kept, in bytes.
const maxEventMessage = 1024

// Recent keeps the latest events the controllers of this process
// recorded, in memory and bounded, for the pages: they show events
// without asking the API server. It is an event.Sink.
type Recent struct {
	scheme *runtime.Scheme
	now    func() time.Time
	events *ring[recentEvent]
}

// recentEvent is one event kept.
type recentEvent struct {
	Time                  time.Time
	Kind, Namespace, Name string
	Type, Reason, Message string
}

// eventList is what the events part of a page shows: the events, newest
// first, whether this UI keeps none, whether to name each one's object.
type eventList struct {
	Events               []recentEvent
	NoEvents, WithObject bool
	Now                  time.Time
}

// NewRecent returns a Recent that keeps the latest size events of the
// objects of scheme's kinds.
func NewRecent(scheme *runtime.Scheme, size int) *Recent {
	return &Recent{scheme: scheme, now: time.Now, events: newRing[recentEvent](size)}
}

// Forward keeps e, about obj, in place of the oldest event when full.
func (r *Recent) Forward(_ context.Context, obj client.Object, e event.Event) {
	gvk, err := apiutil.GVKForObject(obj, r.scheme)
	if err != nil {
		return
	}
	msg := cut(e.Message, maxEventMessage)
	kept := recentEvent{Time: r.now(), Kind: gvk.Kind, Namespace: obj.GetNamespace(), Name: obj.GetName(),
		Type: e.Type, Reason: e.Reason, Message: msg}
	r.events.add(kept)
}

// newest returns at most max of the kept events that pass keep, newest
// first.
func (r *Recent) newest(max int, keep func(recentEvent) bool) []recentEvent {
	if r == nil {
		return nil
	}
	return r.events.newest(max, keep)
}

// recentEvents returns the newest max events of r's objects that pass
// keep and that r's user may see.
func (s *Server) recentEvents(r *http.Request, max int, keep func(recentEvent) bool) []recentEvent {
	return s.Events.newest(max, func(e recentEvent) bool { return keep(e) && s.mayList(r, e.Kind, e.Namespace) })
}

// mayList reports whether r's user may list the kind in namespace:
// always without sign-in, whose one user sees all the UI reads.
func (s *Server) mayList(r *http.Request, kind, namespace string) bool {
	reader, ok := s.Reader.(*accessReader)
	if !ok {
		return true
	}
	k, known := s.kind(kind)
	u, signedIn := userFrom(r.Context())
	if !known || !signedIn {
		return false
	}
	resource, err := reader.resourceOf(k.New())
	if err != nil {
		return false
	}
	allowed, err := reader.access.may(r.Context(), u, "list", resource, namespace, "")
	return err == nil && allowed
}
