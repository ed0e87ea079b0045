package kustomize

import (
	"context"
	"errors"
	"fmt"

	kustomizev1 "github.com/windlass-dev/windlass/api/kustomize/v1"
	"github.com/windlass-dev/windlass/internal/fetch"
	"github.com/windlass-dev/windlass/internal/reconcile/outcome"
	"github.com/windlass-dev/windlass/internal/reconcile/sourceref"
)

// sourceRef returns obj's spec.sourceRef.
func sourceRef(obj *kustomizev1.Kustomization) sourceref.Ref {
	ref := obj.Spec.SourceRef
	return sourceref.Ref{Kind: ref.Kind, Name: ref.Name, Namespace: ref.Namespace}
}

// sourceKey returns the key of obj's source, under which the runner
// indexes Kustomizations (reconcile.SourceRefIndex).
func sourceKey(obj *kustomizev1.Kustomization) string {
	return sourceref.Key(obj.Namespace, sourceRef(obj))
}

// getSource returns obj's source (see sourceref.Resolver.Get). An
// artifact being stored again here (see StoredAgainHere) is waited for
// only when the run needs its content (see acquireTree): a run that finds
// nothing changed since status.verified needs none.
func (r *KustomizationReconciler) getSource(ctx context.Context, obj *kustomizev1.Kustomization) (sourceref.Source, error) {
	resolver := sourceref.Resolver{
		Client: r.Client, Kinds: sourceref.Served(), NoCrossNamespaceRefs: r.NoCrossNamespaceRefs, Requeue: r.DependencyRequeue,
	}
	return resolver.Get(ctx, obj.Namespace, sourceRef(obj))
}

// acquireTree returns the tree of the artifact of source, of kind, shared
// with the other Kustomizations of the same artifact (see
// fetch.TreeCache), and the function that ends its use. An artifact that a
// newer revision replaced meanwhile, or that this process is storing again
// (another replica stored it), is waited for, not failed on.
func (r *KustomizationReconciler) acquireTree(ctx context.Context, kind string, source sourceref.Source) (string, func(), error) {
	a := source.GetArtifact()
	if r.StoredAgainHere != nil && r.StoredAgainHere(kind, source, *a) {
		return "", nil, sourceref.WaitStoredAgain(kind, source, r.DependencyRequeue)
	}
	dir, release, err := r.trees.AcquireArtifact(ctx, *a, r.Fetcher)
	switch {
	case err == nil || ctx.Err() != nil:
		return dir, release, err
	case errors.Is(err, fetch.ErrNotFound):
		return "", nil, outcome.Wait(kustomizev1.ArtifactFailedReason,
			fmt.Errorf("artifact for revision '%s' is gone from storage, waiting for the source's next artifact", a.Revision), r.DependencyRequeue)
	default:
		return "", nil, outcome.Fail(kustomizev1.ArtifactFailedReason, fmt.Errorf("fetching the artifact of revision '%s': %w", a.Revision, err))
	}
}
