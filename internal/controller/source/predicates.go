package source

import (
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/windlass-dev/windlass/api/meta"
)

// reconcileRequested passes updates that change the reconcile request
// annotation, so that `reconcile.fluxcd.io/requestedAt` acts at once.
type reconcileRequested struct {
	predicate.Funcs
}

// Update passes an update whose reconcile request token changed.
func (reconcileRequested) Update(e event.UpdateEvent) bool {
	if e.ObjectOld == nil || e.ObjectNew == nil {
		return false
	}
	oldToken, _ := meta.ReconcileAnnotationValue(e.ObjectOld.GetAnnotations())
	newToken, ok := meta.ReconcileAnnotationValue(e.ObjectNew.GetAnnotations())
	return ok && newToken != oldToken
}

// artifactSource is an object that publishes an artifact.
type artifactSource interface {
	GetArtifact() *meta.Artifact
}

// artifactChanged passes the events in which a source's artifact appears,
// changes digest or goes, so that its consumers are reconciled at once.
type artifactChanged struct {
	predicate.Funcs
}

// Create passes a source that already has an artifact.
func (artifactChanged) Create(e event.CreateEvent) bool {
	s, ok := e.Object.(artifactSource)
	return ok && s.GetArtifact() != nil
}

// Update passes a change of the artifact's digest or revision.
func (artifactChanged) Update(e event.UpdateEvent) bool {
	oldSource, ok1 := e.ObjectOld.(artifactSource)
	newSource, ok2 := e.ObjectNew.(artifactSource)
	if !ok1 || !ok2 {
		return false
	}
	a, b := oldSource.GetArtifact(), newSource.GetArtifact()
	if a == nil || b == nil {
		return a != b
	}
	return a.Digest != b.Digest || a.Revision != b.Revision
}

// Delete passes the deletion of a source.
func (artifactChanged) Delete(event.DeleteEvent) bool { return true }
