package helm

import (
	"helm.sh/helm/v4/pkg/kube"

	helmv2 "github.com/windlass-dev/windlass/api/helm/v2"
	"github.com/windlass-dev/windlass/internal/helm/postrender"
	helmaction "github.com/windlass-dev/windlass/internal/helm/release"
)

// installOptions maps spec.install to the options of an install; replace
// reuses the name of a release whose history is kept.
func installOptions(obj *helmv2.HelmRelease, sc *releaseScope, replace bool) helmaction.InstallOptions {
	in := obj.GetInstall()
	ssa := in.ServerSideApply == nil || *in.ServerSideApply
	return helmaction.InstallOptions{
		ReleaseName:              obj.GetReleaseName(),
		Namespace:                obj.GetReleaseNamespace(),
		Timeout:                  obj.ActionTimeout(in.Timeout),
		Wait:                     !in.DisableWait,
		WaitForJobs:              !in.DisableWaitForJobs,
		WaitStrategy:             waitStrategy(obj),
		DisableHooks:             in.DisableHooks,
		DisableOpenAPIValidation: in.DisableOpenAPIValidation,
		DisableSchemaValidation:  in.DisableSchemaValidation,
		Replace:                  in.Replace || replace,
		CRDs:                     in.GetCRDsPolicy(),
		CreateNamespace:          in.CreateNamespace,
		ServerSideApply:          ssa,
		TakeOwnership:            !in.DisableTakeOwnership,
		PostRenderer:             sc.postRenderer,
		Description:              "Install complete",
		Applied:                  sc.observeApplied,
	}
}

// upgradeOptions maps spec.upgrade to the options of an upgrade.
func upgradeOptions(obj *helmv2.HelmRelease, sc *releaseScope) helmaction.UpgradeOptions {
	up := obj.GetUpgrade()
	return helmaction.UpgradeOptions{
		ReleaseName:              obj.GetReleaseName(),
		Namespace:                obj.GetReleaseNamespace(),
		Timeout:                  obj.ActionTimeout(up.Timeout),
		Wait:                     !up.DisableWait,
		WaitForJobs:              !up.DisableWaitForJobs,
		WaitStrategy:             waitStrategy(obj),
		DisableHooks:             up.DisableHooks,
		DisableOpenAPIValidation: up.DisableOpenAPIValidation,
		DisableSchemaValidation:  up.DisableSchemaValidation,
		Force:                    up.Force,
		PreserveValues:           up.PreserveValues,
		CleanupOnFail:            up.CleanupOnFail,
		MaxHistory:               obj.GetMaxHistory(),
		CRDs:                     up.GetCRDsPolicy(),
		ServerSideApply:          up.ServerSideApply,
		TakeOwnership:            !up.DisableTakeOwnership,
		PostRenderer:             sc.postRenderer,
		Applied:                  sc.observeApplied,
	}
}

// waitStrategy returns how the release's objects are waited for: kstatus
// (the default), or Helm's legacy polling when the release asks for it.
func waitStrategy(obj *helmv2.HelmRelease) kube.WaitStrategy {
	if obj.Spec.WaitStrategy != nil && obj.Spec.WaitStrategy.Name == "legacy" {
		return kube.LegacyStrategy
	}
	return kube.StatusWatcherStrategy
}

// digests returns the digests of obj's post-renderers and common metadata,
// which a deployed release must have been made with to be current.
func (r *HelmReleaseReconciler) digests(obj *helmv2.HelmRelease) (postRenderers, commonMetadata string) {
	return postrender.Digest(obj), postrender.CommonMetadataDigest(obj)
}
