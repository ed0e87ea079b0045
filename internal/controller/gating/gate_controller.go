package gating

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlevent "sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	gatingv1alpha1 "github.com/windlass-dev/windlass/api/gating/v1alpha1"
	"github.com/windlass-dev/windlass/api/meta"
	"github.com/windlass-dev/windlass/internal/conditions"
	"github.com/windlass-dev/windlass/internal/event"
	"github.com/windlass-dev/windlass/internal/metrics"
	"github.com/windlass-dev/windlass/internal/patch"
	"github.com/windlass-dev/windlass/internal/reconcile"
	"github.com/windlass-dev/windlass/internal/reconcile/gate"
	"github.com/windlass-dev/windlass/internal/reconcile/outcome"
)

// +kubebuilder:rbac:groups=gating.toolkit.fluxcd.io,resources=gates,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=gating.toolkit.fluxcd.io,resources=gates/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=gating.toolkit.fluxcd.io,resources=gates/finalizers,verbs=get;create;update;patch;delete
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch
// +kubebuilder:rbac:groups="events.k8s.io",resources=events,verbs=create;patch

// Event reasons of a Gate.
const (
	// GateOpenedReason: the gate opened.
	GateOpenedReason = "GateOpened"
	// GateClosedReason: the gate closed.
	GateClosedReason = "GateClosed"
)

// transitionSlack is added to the delay until a transition, so that the
// evaluation lands after it rather than a hair before.
const transitionSlack = 10 * time.Millisecond

// GateReconciler reconciles Gates.
type GateReconciler struct {
	client.Client
	// Events records the transitions and the invalid requests.
	Events *event.Recorder
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// JitterPercent spreads each gate's interval (never its transitions).
	JitterPercent int
}

// gateKind is the Gate kind for the runner.
func (r *GateReconciler) gateKind() reconcile.Kind[*gatingv1alpha1.Gate] {
	return reconcile.Kind[*gatingv1alpha1.Gate]{
		Name:           gatingv1alpha1.GateKind,
		New:            func() *gatingv1alpha1.Gate { return &gatingv1alpha1.Gate{} },
		SuccessReason:  meta.SucceededReason,
		SuccessMessage: func(obj *gatingv1alpha1.Gate) string { return conditions.Message(obj, gatingv1alpha1.OpenedCondition) },
		// An invalid request makes Ready False, not a failure: the gate is
		// decided all the same, and evaluated again on time.
		NegativeConditions: []string{gatingv1alpha1.RequestInvalidCondition},
		Run:                r.run,
		Summarized:         r.untilNextTransition,
		Forget:             func(key types.NamespacedName) { metrics.ForgetGate(key.Namespace, key.Name) },
	}
}

// SetupWithManager registers the reconciler with mgr.
func (r *GateReconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager, opts reconcile.ControllerOptions) error {
	runner := &reconcile.Runner[*gatingv1alpha1.Gate]{
		Client: r.Client, Events: r.Events, JitterPercent: r.JitterPercent, Kind: r.gateKind(),
	}
	b, err := runner.Setup(ctx, mgr, opts)
	if err != nil {
		return err
	}
	return b.Watches(&gatingv1alpha1.Gate{}, &handler.EnqueueRequestForObject{}, builder.WithPredicates(requestChanged())).
		Complete(runner)
}

// requestChanged passes the updates of a gate whose open or close request
// changed: annotations do not change the generation.
func requestChanged() predicate.Predicate {
	return predicate.Funcs{
		CreateFunc:  func(ctrlevent.CreateEvent) bool { return false },
		DeleteFunc:  func(ctrlevent.DeleteEvent) bool { return false },
		GenericFunc: func(ctrlevent.GenericEvent) bool { return false },
		UpdateFunc: func(e ctrlevent.UpdateEvent) bool {
			before, after := e.ObjectOld.GetAnnotations(), e.ObjectNew.GetAnnotations()
			for _, key := range []string{gatingv1alpha1.OpenRequestAnnotation, gatingv1alpha1.CloseRequestAnnotation} {
				if before[key] != after[key] {
					return true
				}
			}
			return false
		},
	}
}

// now returns the reconciler's time.
func (r *GateReconciler) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

// run decides the gate's state now and writes it to the status.
func (r *GateReconciler) run(ctx context.Context, obj *gatingv1alpha1.Gate, _ *patch.Helper) (outcome.Result, error) {
	wasOpen, decidedBefore := opened(obj)
	d, problems, err := gate.Evaluate(obj, r.now())
	r.writeDecision(obj, d)
	r.recordTransition(ctx, obj, d, wasOpen, decidedBefore)
	metrics.RecordGate(obj.Namespace, obj.Name, d.Open)
	var specErr *gate.SpecError
	if errors.As(err, &specErr) {
		return outcome.ResultEmpty, outcome.Stall(specErr.Reason, specErr)
	}
	if len(problems) == 0 {
		conditions.Delete(obj, gatingv1alpha1.RequestInvalidCondition)
		return outcome.ResultSuccess, nil
	}
	// The gate is decided; the invalid request is ignored, and said until
	// it is fixed (a Warning event when first seen).
	if conditions.Message(obj, gatingv1alpha1.RequestInvalidCondition) != problems[0].Message {
		r.Events.Warning(ctx, obj, problems[0].Reason, "", problems[0].Message)
	}
	conditions.MarkTrue(obj, gatingv1alpha1.RequestInvalidCondition, problems[0].Reason, "%s", problems[0].Message)
	return outcome.ResultSuccess, nil
}

// opened returns the gate's state before this run, and whether it had one.
func opened(obj *gatingv1alpha1.Gate) (open, decided bool) {
	c := conditions.Get(obj, gatingv1alpha1.OpenedCondition)
	if c == nil {
		return false, false
	}
	return c.Status == metav1.ConditionTrue, true
}

// writeDecision writes d to the Opened condition and the status times.
func (r *GateReconciler) writeDecision(obj *gatingv1alpha1.Gate, d gate.Decision) {
	if d.Open {
		conditions.MarkTrue(obj, gatingv1alpha1.OpenedCondition, meta.ReconciliationSucceededReason, "%s", d.Message)
	} else {
		reason := meta.ReconciliationSucceededReason
		if d.Cause == gate.CauseInvalid {
			reason = meta.ReconciliationFailedReason
		}
		conditions.MarkFalse(obj, gatingv1alpha1.OpenedCondition, reason, "%s", d.Message)
	}
	obj.Status.RequestedAt = metaTime(d.RequestedAt)
	obj.Status.ResetToDefaultAt = metaTime(d.ResetToDefaultAt)
	obj.Status.NextTransition = metaTime(d.NextTransition)
}

// recordTransition records an event when the gate opened or closed (or
// got its first state), naming what caused it.
func (r *GateReconciler) recordTransition(ctx context.Context, obj *gatingv1alpha1.Gate, d gate.Decision, wasOpen, decidedBefore bool) {
	if decidedBefore && wasOpen == d.Open {
		return
	}
	reason, verb := GateClosedReason, "closed"
	if d.Open {
		reason, verb = GateOpenedReason, "opened"
	}
	msg := d.Message
	if !strings.HasPrefix(msg, "Gate "+verb+" by ") { // a request's message does not say it
		msg = fmt.Sprintf("Gate %s by %s: %s", verb, d.Because, d.Message)
	}
	r.Events.Normal(ctx, obj, reason, "", msg)
}

// untilNextTransition brings the next run forward to the gate's next
// transition, without jitter, when it comes before the interval.
func (r *GateReconciler) untilNextTransition(_ context.Context, obj *gatingv1alpha1.Gate, o *reconcile.Outcome) {
	next := obj.Status.NextTransition
	if next == nil || o.Err != nil && !reconcile.IsTerminal(o.Err) {
		return
	}
	until := next.Sub(r.now()) + transitionSlack
	if until < transitionSlack {
		until = transitionSlack
	}
	if o.Result.RequeueAfter == 0 || until < o.Result.RequeueAfter {
		o.Result.RequeueAfter = until
	}
}

// metaTime converts an optional time.
func metaTime(t *time.Time) *metav1.Time {
	if t == nil {
		return nil
	}
	mt := metav1.NewTime(*t)
	return &mt
}
