package kustomize

import (
	kustomizev1 "github.com/windlass-dev/windlass/api/kustomize/v1"
	"github.com/windlass-dev/windlass/api/meta"
	"github.com/windlass-dev/windlass/internal/impersonation"
	"github.com/windlass-dev/windlass/internal/reconcile/outcome"
	"github.com/windlass-dev/windlass/internal/reconcile/sourceref"
)

// checkServed (the kind's CheckSpec, run first) stalls a Kustomization
// whose spec asks for what the schema accepts but Windlass does not serve,
// before anything is read, fetched, built or applied. A kubeConfig with configMapRef
// (workload identity) names a remote cluster: applying it to the local one
// instead would be wrong, so it stalls (UnsupportedKubeConfig). A source
// kind such as ExternalArtifact stalls with UnsupportedSourceKind.
func checkServed(obj *kustomizev1.Kustomization) error {
	if err := unservedKubeConfig(obj); err != nil {
		return err
	}
	return sourceref.Served().Check(obj.Spec.SourceRef.Kind)
}

// unservedKubeConfig returns the stall of a kubeConfig Windlass does not
// serve, or nil.
func unservedKubeConfig(obj *kustomizev1.Kustomization) error {
	if err := impersonation.CheckServed(obj.Spec.KubeConfig); err != nil {
		return outcome.Stall(meta.UnsupportedKubeConfigReason, err)
	}
	return nil
}
