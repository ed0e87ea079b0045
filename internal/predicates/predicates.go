// Package predicates filters the watch events that wake Windlass
// reconcilers, so that a reconciler runs when something it depends on
// changed, and not on its own status updates.
package predicates

import (
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/windlass-dev/windlass/api/meta"
)

// ReconcileRequested passes updates that change the reconcile request
// annotation, so that `reconcile.fluxcd.io/requestedAt` acts at once.
type ReconcileRequested struct {
	predicate.Funcs
}

// Update passes an update whose reconcile request token changed.
func (ReconcileRequested) Update(e event.UpdateEvent) bool {
	if e.ObjectOld == nil || e.ObjectNew == nil {
		return false
	}
	oldToken, _ := meta.ReconcileAnnotationValue(e.ObjectOld.GetAnnotations())
	newToken, ok := meta.ReconcileAnnotationValue(e.ObjectNew.GetAnnotations())
	return ok && newToken != oldToken
}

// ArtifactSource is an object that publishes an artifact.
type ArtifactSource interface {
	// GetArtifact returns the source's artifact, or nil.
	GetArtifact() *meta.Artifact
}

// ArtifactChanged passes the events in which a source's artifact appears,
// changes digest or goes, so that its consumers are reconciled at once.
type ArtifactChanged struct {
	predicate.Funcs
}

// Create passes a source that already has an artifact.
func (ArtifactChanged) Create(e event.CreateEvent) bool {
	s, ok := e.Object.(ArtifactSource)
	return ok && s.GetArtifact() != nil
}

// Update passes a change of the artifact's digest or revision.
func (ArtifactChanged) Update(e event.UpdateEvent) bool {
	a, b, ok := artifactsOf(e)
	if !ok {
		return false
	}
	if a == nil || b == nil {
		return a != b
	}
	return a.Digest != b.Digest || a.Revision != b.Revision
}

// artifactsOf returns the artifacts of a source before and after the
// update e, and false when its objects are not sources.
func artifactsOf(e event.UpdateEvent) (before, after *meta.Artifact, ok bool) {
	oldSource, ok1 := e.ObjectOld.(ArtifactSource)
	newSource, ok2 := e.ObjectNew.(ArtifactSource)
	if !ok1 || !ok2 {
		return nil, nil, false
	}
	return oldSource.GetArtifact(), newSource.GetArtifact(), true
}

// Delete passes the deletion of a source.
func (ArtifactChanged) Delete(event.DeleteEvent) bool { return true }

// ArtifactMoved passes the updates in which a source's artifact, the same
// content, is served at another URL: another replica holds the source
// (--shards=auto), and a consumer that could not download it from the
// replica that went must try again at once.
type ArtifactMoved struct {
	predicate.Funcs
}

// Create passes nothing: ArtifactChanged does.
func (ArtifactMoved) Create(event.CreateEvent) bool { return false }

// Update passes a change of the artifact's URL.
func (ArtifactMoved) Update(e event.UpdateEvent) bool {
	a, b, ok := artifactsOf(e)
	return ok && a != nil && b != nil && a.URL != b.URL
}

// Delete passes nothing: ArtifactChanged does.
func (ArtifactMoved) Delete(event.DeleteEvent) bool { return false }

// Generic passes nothing.
func (ArtifactMoved) Generic(event.GenericEvent) bool { return false }

// readyObject is an object with conditions.
type readyObject interface {
	GetConditions() []metav1.Condition
}

// BecameReady passes the updates in which an object's Ready condition turns
// True, or stays True for a new generation or a new message (a new revision
// applied), so that the objects that depend on it act at once.
type BecameReady struct {
	predicate.Funcs
}

// Update passes an update that makes or keeps the object Ready with news.
func (BecameReady) Update(e event.UpdateEvent) bool {
	oldObj, ok1 := e.ObjectOld.(readyObject)
	newObj, ok2 := e.ObjectNew.(readyObject)
	if !ok1 || !ok2 {
		return false
	}
	newReady := apimeta.FindStatusCondition(newObj.GetConditions(), "Ready")
	if newReady == nil || newReady.Status != metav1.ConditionTrue {
		return false
	}
	oldReady := apimeta.FindStatusCondition(oldObj.GetConditions(), "Ready")
	return oldReady == nil || oldReady.Status != metav1.ConditionTrue ||
		oldReady.Message != newReady.Message || oldReady.ObservedGeneration != newReady.ObservedGeneration
}
