package source

import (
	"fmt"

	"github.com/windlass-dev/windlass/api/meta"
	sourcev1 "github.com/windlass-dev/windlass/api/source/v1"
	"github.com/windlass-dev/windlass/internal/reconcile/gitsource"
	"github.com/windlass-dev/windlass/internal/reconcile/outcome"
)

// The checkServed functions are their kinds' CheckSpec: they run first,
// before a gate, a Secret or the network is read: a value the schema accepts but Windlass
// does not serve stalls at once, with a reason and a message that name it.

// checkServed stalls a GitRepository whose spec.provider or
// spec.serviceAccountName is not served.
func (r *GitRepositoryReconciler) checkServed(obj *sourcev1.GitRepository) error {
	return gitsource.CheckProvider(obj)
}

// checkServed stalls an OCIRepository whose spec.provider or
// spec.verify.provider is not served.
func (r *OCIRepositoryReconciler) checkServed(obj *sourcev1.OCIRepository) error {
	if err := unservedProvider(obj.Spec.Provider, "use provider generic with spec.secretRef or spec.serviceAccountName"); err != nil {
		return err
	}
	return unservedVerification(obj.Spec.Verify)
}

// checkServed stalls a Bucket whose spec.provider is not served.
func (r *BucketReconciler) checkServed(obj *sourcev1.Bucket) error {
	return unservedProvider(obj.Spec.Provider, "use provider generic, which speaks the S3 API, with spec.secretRef")
}

// checkServed stalls a HelmRepository whose spec.provider is not served,
// whatever its type: a default (HTTP) repository never uses a provider, so
// one that names a cloud provider asks for what Windlass would not do.
func (r *HelmRepositoryReconciler) checkServed(obj *sourcev1.HelmRepository) error {
	return unservedProvider(obj.Spec.Provider, "use provider generic with spec.secretRef")
}

// checkServed stalls a HelmChart whose spec.verify.provider is not
// served, or that asks to verify a chart of a GitRepository or a Bucket:
// only charts of OCI registries carry signatures.
func (r *HelmChartReconciler) checkServed(obj *sourcev1.HelmChart) error {
	if kind := obj.Spec.SourceRef.Kind; obj.Spec.Verify != nil && kind != sourcev1.HelmRepositoryKind {
		return unverifiableChart(fmt.Sprintf("the chart comes from %s '%s'", kind, obj.Spec.SourceRef.Name))
	}
	return unservedVerification(obj.Spec.Verify)
}

// unverifiableChart is the stall of a HelmChart whose spec.verify cannot
// be honoured, because of where its chart comes from (why).
func unverifiableChart(why string) error {
	return outcome.Stall(meta.UnsupportedVerificationReason, fmt.Errorf(
		"spec.verify is served only for charts of OCI HelmRepositories, and %s: remove spec.verify, or move the chart to an OCI registry", why))
}

// unservedProvider returns the stall of a spec.provider other than generic
// (aws, azure, gcp: cloud workload identity, which Windlass does not serve),
// or nil; hint says what to use instead.
func unservedProvider(provider, hint string) error {
	if provider == "" || provider == sourcev1.OCIProviderGeneric {
		return nil
	}
	return outcome.Stall(meta.UnsupportedProviderReason, fmt.Errorf(
		"spec.provider '%s' is not served by Windlass (it needs a cloud workload identity): %s", provider, hint))
}

// unservedVerification returns the stall of a spec.verify.provider other
// than cosign (notation), or nil.
func unservedVerification(v *sourcev1.OCIRepositoryVerification) error {
	if v == nil || v.Provider == sourcev1.VerificationProviderCosign {
		return nil
	}
	return outcome.Stall(meta.UnsupportedVerificationProviderReason, fmt.Errorf(
		"spec.verify.provider '%s' is not served by Windlass: use cosign", v.Provider))
}
