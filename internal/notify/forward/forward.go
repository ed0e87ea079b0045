// Package forward hands the events that Windlass controllers record to the
// notification dispatcher. When the controllers share a process with the
// notification controller, Sink is an event.Sink that turns each event
// into the wire event (event.toolkit.fluxcd.io/v1beta1) and dispatches it
// with a call: no copy over the network, no API request. When they run
// apart, Poster POSTs the wire events from a bounded queue with retries to
// the notification controller's event endpoint, Handler, which dispatches
// them there. The endpoint admits only the service accounts it is told to:
// a Poster sends its service-account token, which a
// kubeauth.TokenReviewer checks with a TokenReview.
package forward

import (
	"context"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	eventv1 "github.com/windlass-dev/windlass/api/event/v1beta1"
	"github.com/windlass-dev/windlass/api/meta"
	"github.com/windlass-dev/windlass/internal/conditions"
	"github.com/windlass-dev/windlass/internal/event"
	"github.com/windlass-dev/windlass/internal/notify/dispatch"
)

// AnnotationPrefix marks the annotations of an object that are added to
// the metadata of its events, without the prefix.
const AnnotationPrefix = eventv1.Group + "/"

// Sink dispatches the events of one controller in process.
type Sink struct {
	// Dispatcher receives the events.
	Dispatcher *dispatch.Dispatcher
	// Scheme names the objects' kinds.
	Scheme *runtime.Scheme
	// Controller is the reporting controller, e.g. "kustomize-controller".
	Controller string
	// Instance is the reporting instance (the pod's name), if known.
	Instance string
	// Now returns the time of an event; time.Now when nil.
	Now func() time.Time
}

// Forward implements event.Sink.
func (s *Sink) Forward(ctx context.Context, obj client.Object, e event.Event) {
	wire, ok := s.Wire(obj, e)
	if !ok {
		return
	}
	s.Dispatcher.Dispatch(ctx, wire, dispatch.Object{Labels: obj.GetLabels(), Ready: e.Type == event.TypeNormal && ready(obj)})
}

// Wire returns the wire event of e about obj; false when obj's kind is not
// known to the scheme.
func (s *Sink) Wire(obj client.Object, e event.Event) (eventv1.Event, bool) {
	gvk, err := apiutil.GVKForObject(obj, s.Scheme)
	if err != nil {
		return eventv1.Event{}, false
	}
	now := time.Now
	if s.Now != nil {
		now = s.Now
	}
	severity := eventv1.SeverityInfo
	if e.Type == event.TypeWarning {
		severity = eventv1.SeverityError
	}
	message := e.Message
	if len(message) > eventv1.MaxMessageLength {
		message = message[:eventv1.MaxMessageLength]
	}
	apiVersion, kind := gvk.ToAPIVersionAndKind()
	return eventv1.Event{
		InvolvedObject: corev1.ObjectReference{APIVersion: apiVersion, Kind: kind, Namespace: obj.GetNamespace(), Name: obj.GetName(),
			UID: obj.GetUID(), ResourceVersion: obj.GetResourceVersion()},
		Severity:            severity,
		Timestamp:           metav1.NewTime(now()),
		Message:             message,
		Reason:              e.Reason,
		Metadata:            metadata(obj, e, gvk.Group),
		ReportingController: s.Controller,
		ReportingInstance:   s.Instance,
	}, true
}

// metadata returns the event's metadata: its own, the revision as
// "<group>/revision", and obj's event.toolkit.fluxcd.io/* annotations
// (without the prefix; the event's own keys win).
func metadata(obj client.Object, e event.Event, group string) map[string]string {
	out := map[string]string{}
	for k, v := range obj.GetAnnotations() {
		if key, ok := strings.CutPrefix(k, AnnotationPrefix); ok && key != "" {
			out[key] = v
		}
	}
	for k, v := range e.Metadata {
		out[k] = v
	}
	if e.Revision != "" {
		out[group+"/"+eventv1.MetaRevision] = e.Revision
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// ready tells whether obj reports Ready=True.
func ready(obj client.Object) bool {
	getter, ok := obj.(conditions.Getter)
	return ok && conditions.IsTrue(getter, meta.ReadyCondition)
}
