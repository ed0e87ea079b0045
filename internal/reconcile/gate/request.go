package gate

import (
	"encoding/json"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	gatingv1alpha1 "github.com/windlass-dev/windlass/api/gating/v1alpha1"
	"github.com/windlass-dev/windlass/api/meta"
	"github.com/windlass-dev/windlass/internal/conditions"
)

// Request is an open or close request about to be made on a gate, by the
// command line or the web UI: the annotations it sets, with a reconcile
// request the controller echoes once it has evaluated the gate.
type Request struct {
	// Open is true for an open request, false for a close request.
	Open bool
	// At is when it takes effect, to the second, in UTC.
	At time.Time
	// Planned is true when At is in the future.
	Planned bool
	// Window is the window to set with it (spec.window); 0 keeps the
	// gate's.
	Window time.Duration
	// Reason says why; empty removes the reason of an earlier request of
	// the same action.
	Reason string
	// Token is the reconcile request sent with it.
	Token string
}

// NewRequest returns a request that takes effect now.
func NewRequest(open bool, now time.Time) Request {
	now = now.UTC()
	return Request{Open: open, At: now.Truncate(time.Second), Token: now.Format(time.RFC3339Nano)}
}

// Action names the request: open or close.
func (r Request) Action() string {
	if r.Open {
		return "open"
	}
	return "close"
}

// annotations returns the request's annotation and its reason's.
func (r Request) annotations() (request, reason string) {
	if r.Open {
		return gatingv1alpha1.OpenRequestAnnotation, gatingv1alpha1.OpenReasonAnnotation
	}
	return gatingv1alpha1.CloseRequestAnnotation, gatingv1alpha1.CloseReasonAnnotation
}

// Annotation is the annotation that makes the request.
func (r Request) Annotation() string {
	request, _ := r.annotations()
	return request
}

// ApplyTo sets the request on g, as its patch does.
func (r Request) ApplyTo(g *gatingv1alpha1.Gate) {
	if g.Annotations == nil {
		g.Annotations = map[string]string{}
	}
	request, reason := r.annotations()
	g.Annotations[request] = stamp(r.At)
	g.Annotations[gatingv1alpha1.LastRequestAnnotation] = r.Action()
	g.Annotations[meta.ReconcileRequestAnnotation] = r.Token
	delete(g.Annotations, reason)
	if r.Reason != "" {
		g.Annotations[reason] = r.Reason
	}
	if r.Window > 0 {
		g.Spec.Window = &metav1.Duration{Duration: r.Window}
	}
}

// Patch returns the merge patch that makes the request: its annotations
// (with LastRequestAnnotation, which makes it win over a request of the
// other action stamped with the same second), a reconcile request, and
// the window.
func (r Request) Patch() ([]byte, error) {
	request, reason := r.annotations()
	annotations := map[string]any{request: stamp(r.At), gatingv1alpha1.LastRequestAnnotation: r.Action(),
		meta.ReconcileRequestAnnotation: r.Token, reason: nil}
	if r.Reason != "" {
		annotations[reason] = r.Reason
	}
	body := map[string]any{"metadata": map[string]any{"annotations": annotations}}
	if r.Window > 0 {
		body["spec"] = map[string]any{"window": metav1.Duration{Duration: r.Window}}
	}
	return json.Marshal(body)
}

// TakenBy reports whether the status of g shows the request: in force
// (status.requestedAt), or for a planned one its next transition, or the
// reconcile request sent with it handled.
func (r Request) TakenBy(g *gatingv1alpha1.Gate) bool {
	if !conditions.Has(g, gatingv1alpha1.OpenedCondition) {
		return false
	}
	if !r.Planned {
		return g.Status.RequestedAt != nil && g.Status.RequestedAt.Time.Equal(r.At)
	}
	return (g.Status.NextTransition != nil && g.Status.NextTransition.Time.Equal(r.At)) || g.Status.LastHandledReconcileAt == r.Token
}
