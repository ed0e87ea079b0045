package kustomize

import (
	"context"

	kustomizev1 "github.com/windlass-dev/windlass/api/kustomize/v1"
	"github.com/windlass-dev/windlass/api/meta"
	"github.com/windlass-dev/windlass/internal/impersonation"
	"github.com/windlass-dev/windlass/internal/reconcile"
	"github.com/windlass-dev/windlass/internal/sourceref"
)

// checkServed is the first step: it stalls a Kustomization whose spec asks
// for what the schema accepts but Windlass does not serve, before anything
// is read, fetched, built or applied. A kubeConfig with configMapRef
// (workload identity) names a remote cluster: applying it to the local one
// instead would be wrong, so it stalls (UnsupportedKubeConfig). A source
// kind such as ExternalArtifact stalls with UnsupportedSourceKind.
func checkServed(_ context.Context, obj *kustomizev1.Kustomization, _ *ksScope) (reconcile.Result, error) {
	if err := unservedKubeConfig(obj); err != nil {
		return reconcile.ResultEmpty, err
	}
	if err := sourceref.Served().Check(obj.Spec.SourceRef.Kind); err != nil {
		return reconcile.ResultEmpty, err
	}
	return reconcile.ResultSuccess, nil
}

// unservedKubeConfig returns the stall of a kubeConfig Windlass does not
// serve, or nil.
func unservedKubeConfig(obj *kustomizev1.Kustomization) error {
	if err := impersonation.CheckServed(obj.Spec.KubeConfig); err != nil {
		return reconcile.Stall(meta.UnsupportedKubeConfigReason, err)
	}
	return nil
}
