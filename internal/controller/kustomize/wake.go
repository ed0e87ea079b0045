package kustomize

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	ctrlreconcile "sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/windlass-dev/windlass/internal/health"
)

// A health wait is rechecked on a timer (healthRecheckDelay), which grows
// to five seconds: a Deployment that becomes available just after a recheck
// would be seen up to five seconds late. The watch of the applied objects
// judges them as they change, so it wakes the Kustomization instead, at the
// moment the last object it waits for is judged healthy (or one failed):
// one run, which reads nothing (it asks the watch) and writes Ready. An
// object that only moves along its rollout wakes nothing, so that a
// Kustomization of many objects costs no status write per object. Objects
// the watch does not judge (custom resources, kinds a healthCheckExprs
// entry judges) leave the wait to the timer.

// wakeQueue is how many woken Kustomizations may wait to be queued; beyond
// it a wake is dropped, and the timer rechecks.
const wakeQueue = 1024

// wakeOnHealth makes the waits wake the Kustomizations whose wait the watch
// decides, and returns the channel of their events.
func (r *KustomizationReconciler) wakeOnHealth() <-chan event.GenericEvent {
	wakes := make(chan event.GenericEvent, wakeQueue)
	r.wakes = wakes
	r.waits.wakes = r.Wakes
	r.waits.woken = func(key types.NamespacedName) { r.wakeIfDecided(context.Background(), key) }
	return wakes
}

// wakeIfDecided wakes the Kustomization key when the watch has decided its
// health wait: every object it waits for is judged healthy, or one failed.
func (r *KustomizationReconciler) wakeIfDecided(ctx context.Context, key types.NamespacedName) {
	if r.wakes == nil || r.Health == nil {
		return
	}
	w, ok := r.waits.current(key)
	if !ok || !decided(ctx, health.NewPending(r.Health, w.pending), w.pending) {
		return
	}
	woken := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}
	select {
	case r.wakes <- event.GenericEvent{Object: woken}:
	default:
	}
}

// decided tells whether verdicts judge every pending object healthy, or
// one failed.
func decided(ctx context.Context, verdicts *health.Pending, pending []health.ObjectStatus) bool {
	for _, p := range pending {
		gvk := schema.FromAPIVersionAndKind(p.Ref.APIVersion, p.Ref.Kind)
		v, ok := verdicts.Verdict(ctx, p.Ref, gvk)
		switch {
		case !ok:
			return false
		case v.Status == health.Failed:
			return true
		case v.Status != health.Current:
			return false
		}
	}
	return true
}

// wakeHandler queues a woken Kustomization ahead of other work, as the
// recheck it replaces would have been.
func wakeHandler() handler.EventHandler {
	return handler.Funcs{
		GenericFunc: func(_ context.Context, e event.GenericEvent, q workqueue.TypedRateLimitingInterface[ctrlreconcile.Request]) {
			req := ctrlreconcile.Request{NamespacedName: client.ObjectKeyFromObject(e.Object)}
			if pq, ok := q.(priorityqueue.PriorityQueue[ctrlreconcile.Request]); ok {
				pq.AddWithOpts(priorityqueue.AddOpts{Priority: ptr.To(urgentPriority)}, req)
				return
			}
			q.Add(req)
		},
	}
}
