package helm

import (
	"fmt"

	helmv2 "github.com/windlass-dev/windlass/api/helm/v2"
	"github.com/windlass-dev/windlass/api/meta"
	sourcev1 "github.com/windlass-dev/windlass/api/source/v1"
	"github.com/windlass-dev/windlass/internal/impersonation"
	"github.com/windlass-dev/windlass/internal/reconcile/outcome"
)

// checkServed (the kind's CheckSpec, run first) stalls a HelmRelease whose spec asks
// for what the schema accepts but Windlass does not serve, before a chart
// is fetched or a release made. A kubeConfig with configMapRef (workload
// identity) names a remote cluster: installing on the local one instead
// would be wrong, so it stalls (UnsupportedKubeConfig). A chartRef kind
// such as ExternalArtifact stalls with UnsupportedSourceKind, and
// spec.chart.spec.verify.provider notation with
// UnsupportedVerificationProvider, and spec.chart.spec.verify of a chart
// from a GitRepository or a Bucket (which carries no signature) with
// UnsupportedVerification (rather than waiting on a HelmChart that would
// stall for it).
func checkServed(obj *helmv2.HelmRelease) error {
	if err := unservedKubeConfig(obj); err != nil {
		return err
	}
	if ref := obj.Spec.ChartRef; ref != nil {
		if err := chartSources().Check(ref.Kind); err != nil {
			return err
		}
	}
	if c := obj.Spec.Chart; c != nil && c.Spec.Verify != nil {
		if c.Spec.Verify.Provider != sourcev1.VerificationProviderCosign {
			return outcome.Stall(meta.UnsupportedVerificationProviderReason, fmt.Errorf(
				"spec.chart.spec.verify.provider '%s' is not served by Windlass: use cosign", c.Spec.Verify.Provider))
		}
		if kind := c.Spec.SourceRef.Kind; kind != sourcev1.HelmRepositoryKind {
			return outcome.Stall(meta.UnsupportedVerificationReason, fmt.Errorf(
				"spec.chart.spec.verify is served only for charts of OCI HelmRepositories, and the chart comes from %s '%s': "+
					"remove spec.chart.spec.verify, or move the chart to an OCI registry", kind, c.Spec.SourceRef.Name))
		}
	}
	return nil
}

// unservedKubeConfig returns the stall of a kubeConfig Windlass does not
// serve, or nil.
func unservedKubeConfig(obj *helmv2.HelmRelease) error {
	if err := impersonation.CheckServed(obj.Spec.KubeConfig); err != nil {
		return outcome.Stall(meta.UnsupportedKubeConfigReason, err)
	}
	return nil
}
