package source

import (
	"context"
	"fmt"

	"github.com/windlass-dev/windlass/api/meta"
	sourcev1 "github.com/windlass-dev/windlass/api/source/v1"
	"github.com/windlass-dev/windlass/internal/gitsource"
	"github.com/windlass-dev/windlass/internal/reconcile"
)

// The checkServed steps run first in their kinds' runs, before a gate, a
// Secret or the network is read: a value the schema accepts but Windlass
// does not serve stalls at once, with a reason and a message that name it.

// checkServed stalls a GitRepository whose spec.provider or
// spec.serviceAccountName is not served.
func (r *GitRepositoryReconciler) checkServed(_ context.Context, obj *sourcev1.GitRepository, _ *gitScope) (reconcile.Result, error) {
	return served(gitsource.CheckProvider(obj))
}

// checkServed stalls an OCIRepository whose spec.provider or
// spec.verify.provider is not served.
func (r *OCIRepositoryReconciler) checkServed(_ context.Context, obj *sourcev1.OCIRepository, _ *ociScope) (reconcile.Result, error) {
	if err := unservedProvider(obj.Spec.Provider, "use provider generic with spec.secretRef or spec.serviceAccountName"); err != nil {
		return served(err)
	}
	return served(unservedVerification(obj.Spec.Verify))
}

// checkServed stalls a Bucket whose spec.provider is not served.
func (r *BucketReconciler) checkServed(_ context.Context, obj *sourcev1.Bucket, _ *bucketScope) (reconcile.Result, error) {
	return served(unservedProvider(obj.Spec.Provider, "use provider generic, which speaks the S3 API, with spec.secretRef"))
}

// checkServed stalls a HelmRepository whose spec.provider is not served,
// whatever its type: a default (HTTP) repository never uses a provider, so
// one that names a cloud provider asks for what Windlass would not do.
func (r *HelmRepositoryReconciler) checkServed(_ context.Context, obj *sourcev1.HelmRepository, _ *helmRepositoryScope) (reconcile.Result, error) {
	return served(unservedProvider(obj.Spec.Provider, "use provider generic with spec.secretRef"))
}

// checkServed stalls a HelmChart whose spec.verify.provider is not
// served, or that asks to verify a chart of a GitRepository or a Bucket:
// only charts of OCI registries carry signatures.
func (r *HelmChartReconciler) checkServed(_ context.Context, obj *sourcev1.HelmChart, _ *helmChartScope) (reconcile.Result, error) {
	if kind := obj.Spec.SourceRef.Kind; obj.Spec.Verify != nil && kind != sourcev1.HelmRepositoryKind {
		return served(unverifiableChart(fmt.Sprintf("the chart comes from %s '%s'", kind, obj.Spec.SourceRef.Name)))
	}
	return served(unservedVerification(obj.Spec.Verify))
}

// unverifiableChart is the stall of a HelmChart whose spec.verify cannot
// be honoured, because of where its chart comes from (why).
func unverifiableChart(why string) error {
	return reconcile.Stall(meta.UnsupportedVerificationReason, fmt.Errorf(
		"spec.verify is served only for charts of OCI HelmRepositories, and %s: remove spec.verify, or move the chart to an OCI registry", why))
}

// served is the outcome of a checkServed step that found err.
func served(err error) (reconcile.Result, error) {
	if err != nil {
		return reconcile.ResultEmpty, err
	}
	return reconcile.ResultSuccess, nil
}

// unservedProvider returns the stall of a spec.provider other than generic
// (aws, azure, gcp: cloud workload identity, which Windlass does not serve),
// or nil; hint says what to use instead.
func unservedProvider(provider, hint string) error {
	if provider == "" || provider == sourcev1.OCIProviderGeneric {
		return nil
	}
	return reconcile.Stall(meta.UnsupportedProviderReason, fmt.Errorf(
		"spec.provider '%s' is not served by Windlass (it needs a cloud workload identity): %s", provider, hint))
}

// unservedVerification returns the stall of a spec.verify.provider other
// than cosign (notation), or nil.
func unservedVerification(v *sourcev1.OCIRepositoryVerification) error {
	if v == nil || v.Provider == sourcev1.VerificationProviderCosign {
		return nil
	}
	return reconcile.Stall(meta.UnsupportedVerificationProviderReason, fmt.Errorf(
		"spec.verify.provider '%s' is not served by Windlass: use cosign", v.Provider))
}
