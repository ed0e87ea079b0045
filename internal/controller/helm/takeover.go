package helm

import (
	"context"
	"fmt"

	hcommon "helm.sh/helm/v4/pkg/release/common"
	hrelease "helm.sh/helm/v4/pkg/release/v1"

	helmv2 "github.com/windlass-dev/windlass/api/helm/v2"
	helmaction "github.com/windlass-dev/windlass/internal/helm/release"
	"github.com/windlass-dev/windlass/internal/reconcile/outcome"
)

// TakeoverRefusedReason is the reason of a HelmRelease that does not take
// over a release made by another tool because its identity could not
// upgrade it.
const TakeoverRefusedReason = "TakeoverRefused"

// TakeoverReason is the reason of the event of a HelmRelease that takes
// over a release made by another tool.
const TakeoverReason = "Takeover"

// owned tells whether rel is the release that obj made last: the latest
// release of status.history, by name, namespace, version and the time it
// was deployed. A release made by another tool (helm install, or helm
// upgrade or rollback over obj's release) is not, and neither is one that
// obj lost track of: it is taken over by an upgrade.
func owned(obj *helmv2.HelmRelease, rel *hrelease.Release) bool {
	latest := obj.Status.History.Latest()
	if latest == nil || rel == nil || rel.Info == nil {
		return false
	}
	deployed := latest.LastDeployed
	return latest.Name == rel.Name && latest.Namespace == rel.Namespace && latest.Version == rel.Version &&
		!deployed.IsZero() && deployed.Unix() == rel.Info.LastDeployed.Unix()
}

// foreign tells whether last is a release in use that obj did not make,
// which the run takes over.
func foreign(obj *helmv2.HelmRelease, last *hrelease.Release) bool {
	return last != nil && last.Info != nil && last.Info.Status != hcommon.StatusUninstalled && !owned(obj, last)
}

// checkTakeover makes sure that obj's identity may upgrade last, a release
// that obj did not make, to the chart and values of the run (rendered with
// the cluster, as the identity) before anything is written: a release the
// identity could not upgrade is not taken, and stays as it is. The refusal
// counts as no failed attempt and is not remediated: the release is not
// obj's.
func (r *HelmReleaseReconciler) checkTakeover(ctx context.Context, obj *helmv2.HelmRelease, sc *releaseScope, last *hrelease.Release) error {
	next, _, err := sc.runner.Render(ctx, sc.chart, sc.values, helmaction.RenderOptions{
		ReleaseName: obj.GetReleaseName(), Namespace: obj.GetReleaseNamespace(), PostRenderer: sc.postRenderer,
	})
	if err != nil {
		return outcome.Fail(TakeoverRefusedReason, fmt.Errorf("not taking over release %s/%s.v%d, which another tool made: rendering the chart: %w",
			last.Namespace, last.Name, last.Version, err))
	}
	if err := sc.runner.CheckUpgradeAccess(ctx, last, next); err != nil {
		return outcome.Fail(TakeoverRefusedReason, fmt.Errorf("not taking over release %s/%s.v%d, which another tool made, as %s: %w",
			last.Namespace, last.Name, last.Version, r.identityOf(obj), err))
	}
	r.Events.Normal(ctx, obj, TakeoverReason, sc.revision, fmt.Sprintf("Taking over release %s/%s.v%d, which another tool made",
		last.Namespace, last.Name, last.Version))
	return nil
}

// identityOf names the identity obj acts as, for messages.
func (r *HelmReleaseReconciler) identityOf(obj *helmv2.HelmRelease) string {
	sa := obj.Spec.ServiceAccountName
	if sa == "" && r.Targets != nil {
		sa = r.Targets.DefaultServiceAccount
	}
	who := "the controller"
	if sa != "" {
		who = fmt.Sprintf("service account %s/%s", obj.Namespace, sa)
	}
	if obj.Spec.KubeConfig != nil {
		who += " through spec.kubeConfig"
	}
	return who
}
