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
	"github.com/windlass-dev/windlass/internal/reconcile"
)

// Role is how a consumer waits behind its gates, and the condition that
// says so.
type Role int

const (
	// Applier: Approved=True while every gate is open, Approved=False
	// (GateClosed) while one is not; nothing is applied, pruned or
	// corrected meanwhile.
	Applier Role = iota
	// Source: Blocked=True (GateClosed) while a gate is not open, and no
	// Blocked otherwise; nothing new is fetched meanwhile.
	Source
)

// StatusConsumer is a consumer whose conditions Enforce writes.
type StatusConsumer interface {
	Consumer
	conditions.Setter
}

// Enforce checks the gates of obj (the first step of a consumer's run) and
// writes the condition of its role: it returns nil when the run may go on,
// a reconcile.Hold error (looked at again after requeue, or when a gate
// opens) when a gate is closed or missing, recording a Normal event when
// the object becomes held or held by another gate, a reconcile.Stall for a
// gate in another namespace while such references are refused, or the
// error of reading a gate. An object without gates has no such condition.
func Enforce(ctx context.Context, r client.Reader, events *event.Recorder, obj StatusConsumer, role Role,
	noCrossNamespaceRefs bool, requeue time.Duration) error {
	condition := meta.ApprovedCondition
	if role == Source {
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
		if role == Source {
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
		return reconcile.Hold(meta.GateClosedReason, errors.New(msg), requeue)
	case errors.As(err, &cross):
		mark(obj, condition, role, meta.AccessDeniedReason, err.Error())
		return reconcile.Stall(meta.AccessDeniedReason, err)
	}
	return err
}

// heldStatus is the status of the role's condition while held.
func heldStatus(role Role) metav1.ConditionStatus {
	if role == Source {
		return metav1.ConditionTrue
	}
	return metav1.ConditionFalse
}

// mark writes the role's condition for a held object.
func mark(obj conditions.Setter, condition string, role Role, reason, msg string) {
	if role == Source {
		conditions.MarkTrue(obj, condition, reason, "%s", msg)
		return
	}
	conditions.MarkFalse(obj, condition, reason, "%s", msg)
}

// heldMessage says which gate holds the object back, in the words of the
// RFC for appliers.
func heldMessage(role Role, closed *ClosedError) string {
	state := "closed"
	if closed.Missing {
		state = "missing"
	}
	if role == Source {
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
