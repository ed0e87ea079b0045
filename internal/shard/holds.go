package shard

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/windlass-dev/windlass/internal/kinds"
	"github.com/windlass-dev/windlass/internal/metrics"
)

// Holds reports whether this member reconciles obj now: it holds obj, and
// has not handed it over. When the ring gives obj to another member, Holds
// hands it over first, on condition that this member still holds it: call
// it from the worker that reconciles obj, so that no run of it is under
// way here when the other member starts one.
func (m *Member) Holds(ctx context.Context, c client.Client, kind string, obj client.Object) (bool, error) {
	m.mu.Lock()
	ring, ready := m.ring, m.ready
	if obj.GetLabels()[HolderLabel] != m.opts.Name {
		// The cache has seen the object leave: it is not released any more.
		delete(m.released, obj.GetUID())
		m.mu.Unlock()
		return false, nil
	}
	_, released := m.released[obj.GetUID()]
	m.mu.Unlock()
	if released {
		return false, nil
	}
	owner := ring.Owner(m.keyOf(kind, obj))
	if !ready || !ring.Has(m.opts.Name) || owner == m.opts.Name {
		return true, nil
	}
	if err := c.Patch(ctx, obj, client.RawPatch(types.JSONPatchType, handover(m.opts.Name, owner))); err != nil {
		if apierrors.IsNotFound(err) || apierrors.IsInvalid(err) || apierrors.IsConflict(err) {
			// Gone, or no longer ours to hand over.
			return false, nil
		}
		return false, err
	}
	m.mu.Lock()
	m.released[obj.GetUID()] = time.Now()
	m.mu.Unlock()
	metrics.ShardMoves.WithLabelValues(kind, "handed_over").Inc()
	ctrl.LoggerFrom(ctx).V(1).Info("Handed over", "to", owner)
	return false, nil
}

// handover is the JSON patch that makes to the holder of an object that
// from holds, and fails when from does not.
func handover(from, to string) []byte {
	path := "/metadata/labels/" + strings.NewReplacer("~", "~0", "/", "~1").Replace(HolderLabel)
	patch, _ := json.Marshal([]map[string]string{
		{"op": "test", "path": path, "value": from},
		{"op": "replace", "path": path, "value": to},
	})
	return patch
}

// Handovers returns the source of the requests by which the member asks
// the controller of kind to hand over objects (see Holds).
func (m *Member) Handovers(kind string) source.Source {
	ch, ok := m.subs[kind]
	if !ok {
		ch = make(chan event.GenericEvent)
	}
	return source.Channel(ch, &handler.EnqueueRequestForObject{})
}

// Mine passes the events of the objects this member holds, or held before
// the change: a controller gets no event of another member's objects.
func (m *Member) Mine() predicate.Predicate {
	held := func(o client.Object) bool { return o != nil && o.GetLabels()[HolderLabel] == m.opts.Name }
	return predicate.Funcs{
		CreateFunc:  func(e event.CreateEvent) bool { return held(e.Object) },
		UpdateFunc:  func(e event.UpdateEvent) bool { return held(e.ObjectNew) || held(e.ObjectOld) },
		DeleteFunc:  func(e event.DeleteEvent) bool { return held(e.Object) },
		GenericFunc: func(e event.GenericEvent) bool { return held(e.Object) },
	}
}

// Moves passes the changes that may change who holds an object: of its
// holder, or of the key it is hashed by.
func (m *Member) Moves() predicate.Predicate {
	return predicate.Funcs{
		CreateFunc: func(event.CreateEvent) bool { return false },
		UpdateFunc: func(e event.UpdateEvent) bool {
			o, n := e.ObjectOld.GetLabels(), e.ObjectNew.GetLabels()
			return o[HolderLabel] != n[HolderLabel] || o[KeyLabel] != n[KeyLabel]
		},
		DeleteFunc:  func(event.DeleteEvent) bool { return false },
		GenericFunc: func(event.GenericEvent) bool { return false },
	}
}

// Reports reports whether this member reports obj, of kind, in its
// metrics: it holds it, or, for a kind that nobody holds (Alerts and
// Providers, ExternalArtifacts, read by every member), the ring gives it
// to this member.
func (m *Member) Reports(kind string, obj client.Object) bool {
	row, _ := kinds.Named(kind)
	if holder := obj.GetLabels()[HolderLabel]; holder != "" || row.Reconciled() {
		return holder == m.opts.Name
	}
	return m.Owns(kind, obj)
}

// Owns reports whether the ring gives obj, of kind, to this member: it
// holds it, or will once it claims it.
func (m *Member) Owns(kind string, obj metav1.Object) bool {
	return m.Ring().Owner(m.keyOf(kind, obj)) == m.opts.Name
}

// keyOf returns what obj, of kind, is hashed by: Key, or for the kinds
// held as one, the controller that serves them.
func (m *Member) keyOf(kind string, obj metav1.Object) string {
	if row, ok := kinds.Named(kind); ok && row.ShardAsOne {
		return "controller:" + row.Controller
	}
	return Key(obj, m.opts.By)
}
