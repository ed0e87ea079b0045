package kustomize

import (
	"context"

	helmv2 "github.com/windlass-dev/windlass/api/helm/v2"
	kustomizev1 "github.com/windlass-dev/windlass/api/kustomize/v1"
	"github.com/windlass-dev/windlass/api/meta"
	"github.com/windlass-dev/windlass/internal/reconcile/dependency"
	"github.com/windlass-dev/windlass/internal/reconcile/sourceref"
)

// checkDependencies returns nil when every dependency is ready, a Waiting
// error naming the first that is not, or a Stalling error (see
// dependency.Checker.Check). A dependency built from the same source must
// have applied the revision that obj is about to apply.
func (r *KustomizationReconciler) checkDependencies(ctx context.Context, obj *kustomizev1.Kustomization, source sourceref.Source) error {
	checker := dependency.Checker[*kustomizev1.Kustomization]{
		Kind:      kustomizev1.KustomizationKind,
		Client:    r.Client,
		New:       func() *kustomizev1.Kustomization { return &kustomizev1.Kustomization{} },
		DependsOn: func(k *kustomizev1.Kustomization) []meta.DependencyReference { return k.Spec.DependsOn },
		UpToDate: func(obj, dep *kustomizev1.Kustomization) bool {
			a := source.GetArtifact()
			return a == nil || sourceKey(obj) != sourceKey(dep) || dep.Status.LastAppliedRevision == a.Revision
		},
		Others:               dependency.Kinds(helmv2.HelmReleaseKind),
		NoCrossNamespaceRefs: r.NoCrossNamespaceRefs,
		Requeue:              r.DependencyRequeue,
	}
	return checker.Check(ctx, obj)
}
