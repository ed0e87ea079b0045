package kustomize

import (
	"context"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	ctrlreconcile "sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/windlass-dev/windlass/api/meta"
	"github.com/windlass-dev/windlass/internal/predicates"
	"github.com/windlass-dev/windlass/internal/reconcile"
	"github.com/windlass-dev/windlass/internal/reconcile/sourceref"
)

// ChangedPaths tells whether a folder of a source's tree differs between
// two of its artifacts; known is false when it cannot tell.
type ChangedPaths interface {
	PathChanged(old, new meta.Artifact, path string) (changed, known bool)
}

// sourceEvents returns the handler that wakes the Kustomizations of a
// source of kind whose artifact changed. In a monorepo a commit wakes every
// Kustomization of the repository, and most find their output unchanged:
// those whose folder the commit changed go first (when r.Changes can tell),
// so that the application a commit changed is applied before the others
// look at the new revision.
func (r *KustomizationReconciler) sourceEvents(kind string) handler.EventHandler {
	return &sourceEventHandler{
		EventHandler: handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []ctrlreconcile.Request {
			list := r.list(ctx, sourceMatch(kind, o))
			reqs := make([]ctrlreconcile.Request, 0, len(list.Items))
			for i := range list.Items {
				reqs = append(reqs, ctrlreconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
			}
			return reqs
		}),
		r:    r,
		kind: kind,
	}
}

// sourceMatch selects the Kustomizations whose source is o, of kind.
func sourceMatch(kind string, o client.Object) client.MatchingFields {
	return client.MatchingFields{reconcile.SourceRefIndex: sourceref.KeyOf(kind, o)}
}

// sourceEventHandler is the handler sourceEvents returns: it maps every
// event to the source's Kustomizations, and ranks them on updates.
type sourceEventHandler struct {
	handler.EventHandler
	r    *KustomizationReconciler
	kind string
}

// Update wakes the source's Kustomizations, those whose folder changed
// first, with a head start over the others (see headStarts).
func (h *sourceEventHandler) Update(ctx context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[ctrlreconcile.Request]) {
	pq, ranked := q.(priorityqueue.PriorityQueue[ctrlreconcile.Request])
	before, after := artifactOf(e.ObjectOld), artifactOf(e.ObjectNew)
	if !ranked || h.r.Changes == nil || before == nil || after == nil {
		h.EventHandler.Update(ctx, e, q)
		return
	}
	list := h.r.list(ctx, sourceMatch(h.kind, e.ObjectNew))
	priorities := make([]int, len(list.Items))
	var changed []types.NamespacedName
	for i := range list.Items {
		ks := &list.Items[i]
		priorities[i] = normalPriority
		if pathChanged, known := h.r.Changes.PathChanged(*before, *after, ks.Spec.Path); known && pathChanged {
			priorities[i] = urgentPriority
			changed = append(changed, client.ObjectKeyFromObject(ks))
		}
	}
	if len(changed) > 0 && len(changed) < len(list.Items) {
		h.r.heads.begin(sourceref.KeyOf(h.kind, e.ObjectNew), changed)
	}
	for i := range list.Items {
		pq.AddWithOpts(priorityqueue.AddOpts{Priority: ptr.To(priorities[i])},
			ctrlreconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
	}
}

// artifactOf returns the artifact of a source, or nil.
func artifactOf(o client.Object) *meta.Artifact {
	if s, ok := o.(predicates.ArtifactSource); ok {
		return s.GetArtifact()
	}
	return nil
}
