package kustomize

import (
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kustomizev1 "github.com/windlass-dev/windlass/api/kustomize/v1"
	"github.com/windlass-dev/windlass/api/meta"
	sourcev1 "github.com/windlass-dev/windlass/api/source/v1"
	"github.com/windlass-dev/windlass/internal/cel"
	"github.com/windlass-dev/windlass/internal/fetch"
	"github.com/windlass-dev/windlass/internal/reconcile"
)

// sourceObject is a source that publishes an artifact.
type sourceObject interface {
	client.Object
	GetArtifact() *meta.Artifact
}

// sourceNamespace returns the namespace of obj's source.
func sourceNamespace(obj *kustomizev1.Kustomization) string {
	if obj.Spec.SourceRef.Namespace != "" {
		return obj.Spec.SourceRef.Namespace
	}
	return obj.Namespace
}

// sourceKey returns the "<kind>/<namespace>/<name>" key of obj's source,
// which indexes Kustomizations by source.
func sourceKey(obj *kustomizev1.Kustomization) string {
	return fmt.Sprintf("%s/%s/%s", obj.Spec.SourceRef.Kind, sourceNamespace(obj), obj.Spec.SourceRef.Name)
}

// getSource returns obj's source. A kind this build does not serve, or a
// refused cross-namespace reference, stalls; a source that does not exist
// yet is waited for.
func (r *KustomizationReconciler) getSource(ctx context.Context, obj *kustomizev1.Kustomization) (sourceObject, error) {
	ref := obj.Spec.SourceRef
	key := types.NamespacedName{Namespace: sourceNamespace(obj), Name: ref.Name}
	if r.NoCrossNamespaceRefs && key.Namespace != obj.Namespace {
		return nil, reconcile.Stall(kustomizev1.AccessDeniedReason,
			fmt.Errorf("cross-namespace reference to %s '%s' is not allowed", ref.Kind, key))
	}
	var source sourceObject
	switch ref.Kind {
	case sourcev1.GitRepositoryKind:
		source = &sourcev1.GitRepository{}
	default:
		return nil, reconcile.Stall(kustomizev1.ArtifactFailedReason,
			fmt.Errorf("source kind '%s' is not supported by this version of Windlass", ref.Kind))
	}
	if err := r.Get(ctx, key, source); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, reconcile.Wait(kustomizev1.ArtifactFailedReason,
				fmt.Errorf("source %s '%s' not found", ref.Kind, key), r.DependencyRequeue)
		}
		return nil, err
	}
	if source.GetArtifact() == nil {
		return nil, reconcile.Wait(kustomizev1.ArtifactFailedReason,
			fmt.Errorf("source %s '%s' has no artifact yet", ref.Kind, key), r.DependencyRequeue)
	}
	return source, nil
}

// fetchArtifact unpacks the source's artifact into dir. An artifact that a
// newer revision replaced meanwhile is waited for, not failed on.
func (r *KustomizationReconciler) fetchArtifact(ctx context.Context, source sourceObject, dir string) error {
	a := source.GetArtifact()
	err := r.Fetcher.Fetch(ctx, *a, dir)
	switch {
	case errors.Is(err, fetch.ErrNotFound):
		return reconcile.Wait(kustomizev1.ArtifactFailedReason,
			fmt.Errorf("artifact for revision '%s' is gone from storage, waiting for the source's next artifact", a.Revision), r.DependencyRequeue)
	case err != nil:
		return reconcile.Fail(kustomizev1.ArtifactFailedReason, fmt.Errorf("fetching the artifact of revision '%s': %w", a.Revision, err))
	}
	return nil
}

// evalReadyExpr evaluates a dependency's readyExpr with the variables 'dep'
// and 'self'. An expression that does not compile stalls.
func evalReadyExpr(expr string, self, dep *kustomizev1.Kustomization) (bool, error) {
	prog, err := cel.Compile(expr, []string{"dep", "self"})
	if err != nil {
		return false, reconcile.Stall(meta.InvalidCELExpressionReason, fmt.Errorf("invalid readyExpr: %w", err))
	}
	selfMap, err := runtime.DefaultUnstructuredConverter.ToUnstructured(self)
	if err != nil {
		return false, err
	}
	depMap, err := runtime.DefaultUnstructuredConverter.ToUnstructured(dep)
	if err != nil {
		return false, err
	}
	ok, err := prog.EvalBool(context.Background(), map[string]any{"dep": depMap, "self": selfMap})
	if err != nil {
		return false, reconcile.Fail(meta.InvalidCELExpressionReason, fmt.Errorf("evaluating readyExpr: %w", err))
	}
	return ok, nil
}
