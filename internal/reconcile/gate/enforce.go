package gate

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/windlass-dev/windlass/api/meta"
	"github.com/windlass-dev/windlass/internal/conditions"
	"github.com/windlass-dev/windlass/internal/event"
	"github.com/windlass-dev/windlass/internal/kinds"
	"github.com/windlass-dev/windlass/internal/reconcile/outcome"
)

// StatusConsumer is a consumer whose conditions Enforce writes.
type StatusConsumer interface {
	Consumer
	conditions.Setter
}

// Enforce checks the gates of obj (the first step of a consumer's run) and
// writes the condition of its role: it returns nil when the run may go on,
// an outcome.Hold error (looked at again after requeue, or when a gate
// opens) when a gate is closed or missing, recording a Normal event when
// the object becomes held or held by another gate, an outcome.Stall for a
// gate in another namespace while such references are refused, or the
// error of reading a gate. An object without gates has no such condition.
func Enforce(ctx context.Context, r client.Reader, events *event.Recorder, obj StatusConsumer, role kinds.GateRole,
	noCrossNamespaceRefs bool, requeue time.Duration) error {
	condition := meta.ApprovedCondition
	if role == kinds.SourceGates {
		condition = meta.BlockedCondition
	}
	if len(obj.GetGates()) == 0 {
		conditions.Delete(obj, condition)
		return nil
	}
	err := Check(ctx, r, obj, noCrossNamespaceRefs)
	var (
		closed *ClosedError
		cross  *CrossNamespaceError
	)
	switch {
	case err == nil:
		if role == kinds.SourceGates {
			conditions.Delete(obj, condition)
		} else {
			conditions.MarkTrue(obj, condition, meta.GatesOpenedReason, "%s", approvedMessage(obj))
		}
		return nil
	case errors.As(err, &closed):
		msg := heldMessage(role, closed)
		if c := conditions.Get(obj, condition); c == nil || c.Status != heldStatus(role) || c.Message != msg {
			events.Normal(ctx, obj, meta.GateClosedReason, "", msg)
		}
		mark(obj, condition, role, meta.GateClosedReason, msg)
		return outcome.Hold(meta.GateClosedReason, errors.New(msg), requeue)
	case errors.As(err, &cross):
		mark(obj, condition, role, meta.AccessDeniedReason, err.Error())
		return outcome.Stall(meta.AccessDeniedReason, err)
	}
	return err
}

// heldStatus is the status of the role's condition while held.
func heldStatus(role kinds.GateRole) metav1.ConditionStatus {
	if role == kinds.SourceGates {
		return metav1.ConditionTrue
	}
	return metav1.ConditionFalse
}

// mark writes the role's condition for a held object.
func mark(obj conditions.Setter, condition string, role kinds.GateRole, reason, msg string) {
	if role == kinds.SourceGates {
		conditions.MarkTrue(obj, condition, reason, "%s", msg)
		return
	}
	conditions.MarkFalse(obj, condition, reason, "%s", msg)
}

// heldMessage says which gate holds the object back, in the words of the
// RFC for appliers.
func heldMessage(role kinds.GateRole, closed *ClosedError) string {
	state := "closed"
	if closed.Missing {
		state = "missing"
	}
	if role == kinds.SourceGates {
		return fmt.Sprintf("Fetching new revisions is blocked, gate '%s' is %s.", closed.Gate, state)
	}
	return fmt.Sprintf("Reconciliation is waiting approval, gate '%s' is %s.", closed.Gate, state)
}

// approvedMessage names every gate of obj, open.
func approvedMessage(obj Consumer) string {
	refs := obj.GetGates()
	names := make([]string, 0, len(refs))
	for _, ref := range refs {
		names = append(names, fmt.Sprintf("'%s'", Key(obj, ref)))
	}
	if len(names) == 1 {
		return fmt.Sprintf("Reconciliation is approved, gate %s is open.", names[0])
	}
	return fmt.Sprintf("Reconciliation is approved, gates %s are open.", strings.Join(names, ", "))
}
