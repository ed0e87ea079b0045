package helm

import (
	"context"
	"fmt"

	hcommon "helm.sh/helm/v4/pkg/release/common"
	hrelease "helm.sh/helm/v4/pkg/release/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	helmv2 "github.com/windlass-dev/windlass/api/helm/v2"
	"github.com/windlass-dev/windlass/internal/conditions"
	"github.com/windlass-dev/windlass/internal/health"
	"github.com/windlass-dev/windlass/internal/helm/drift"
	"github.com/windlass-dev/windlass/internal/helm/release"
	kspec "github.com/windlass-dev/windlass/internal/kustomization"
	"github.com/windlass-dev/windlass/internal/reconcile/outcome"
	"github.com/windlass-dev/windlass/internal/ssa"
)

// localVersions returns r.Versions when obj's release is on the local
// cluster, whose objects it watches; nil otherwise.
func (r *HelmReleaseReconciler) localVersions(obj *helmv2.HelmRelease) FieldsReader {
	if r.Versions == nil || obj.Spec.KubeConfig != nil {
		return nil
	}
	return r.Versions
}

// localCaches are the caches of the local cluster that a release runner
// uses: the newest releases, and the health of the objects and its changes.
type localCaches struct {
	newest *release.NewestCache
	health health.Watch
	wakes  *health.Wakes
}

// local returns r's caches of the local cluster for obj's release: none
// when the release is on another cluster (spec.kubeConfig).
func (r *HelmReleaseReconciler) local(obj *helmv2.HelmRelease) localCaches {
	if obj.Spec.KubeConfig != nil {
		return localCaches{}
	}
	return localCaches{newest: r.Releases, health: r.Health, wakes: r.Wakes}
}

// appliedInSync tells whether the fields versions that the run's action
// applied are ones at which the objects are without drift: the action deployed
// the release that drift detection compares against, with server-side
// apply, so that each object was then what the release declares.
func appliedInSync(sc *releaseScope) bool {
	return len(sc.applied) > 0 && sc.appliedVersion == sc.last.Version &&
		sc.last.ApplyMethod == string(hrelease.ApplyMethodServerSideApply)
}

// reconcileDrift compares the objects of a deployed release with the
// cluster: drift is reported in the Drifted condition and an event, and
// corrected when the mode is enabled.
func (r *HelmReleaseReconciler) reconcileDrift(ctx context.Context, obj *helmv2.HelmRelease, sc *releaseScope) (outcome.Result, error) {
	mode := obj.GetDriftDetectionMode()
	key := client.ObjectKeyFromObject(obj)
	if mode == helmv2.DriftDetectionDisabled || sc.last == nil || sc.last.Info.Status != hcommon.StatusDeployed {
		conditions.Delete(obj, helmv2.DriftedCondition)
		r.synced.forget(key)
		return outcome.ResultSuccess, nil
	}
	rules, err := kspec.IgnoreRules(obj.Spec.DriftDetection.Ignore)
	if err != nil {
		return outcome.ResultEmpty, outcome.Stall(helmv2.InvalidSpecReason, fmt.Errorf("invalid drift detection ignore rules: %w", err))
	}
	objs, err := releaseObjects(sc)
	if err != nil {
		return outcome.ResultEmpty, outcome.Fail(helmv2.InventoryBuildFailedReason, err)
	}
	drift.SetReleaseMetadata(objs, sc.last.Name, sc.last.Namespace)
	m, err := ssa.New(sc.target.Client, sc.target.Mapper, ssa.Options{FieldManager: release.FieldManager, Owner: drift.Owner(obj)})
	if err != nil {
		return outcome.ResultEmpty, outcome.Fail(helmv2.DriftDetectedReason, err)
	}
	basis, versions := driftBasis(obj, sc), r.localVersions(obj)
	if versions != nil {
		if appliedInSync(sc) {
			r.synced.record(key, basis, sc.applied, nil)
		}
		objs = r.synced.toCheck(ctx, key, basis, objs, versions)
	}
	report, err := drift.Detect(ctx, m, objs, rules)
	if err != nil {
		return outcome.ResultEmpty, outcome.Fail(helmv2.DriftDetectedReason, fmt.Errorf("detecting drift: %w", err))
	}
	if versions != nil {
		r.synced.record(key, basis, report.InSync, report.DriftedObjects())
	}
	if !report.Drifted() {
		conditions.MarkFalse(obj, helmv2.DriftedCondition, helmv2.NoDriftDetectedReason, "No drift detected")
		return outcome.ResultSuccess, nil
	}
	msg := fmt.Sprintf("Cluster state of release %s/%s.v%d differs from the release: %s", sc.last.Namespace, sc.last.Name,
		sc.last.Version, report.Summary())
	if mode == helmv2.DriftDetectionWarn {
		conditions.MarkTrue(obj, helmv2.DriftedCondition, helmv2.DriftDetectedReason, "%s", msg)
		r.Events.Warning(ctx, obj, helmv2.DriftDetectedReason, sc.revision, msg)
		return outcome.ResultSuccess, nil
	}
	changes, err := drift.Correct(ctx, m, report)
	recordDriftCorrected(changes)
	if err != nil {
		conditions.MarkTrue(obj, helmv2.DriftedCondition, helmv2.DriftDetectedReason, "%s", msg)
		return outcome.ResultEmpty, outcome.Fail(helmv2.DriftDetectedReason, fmt.Errorf("%s; correcting it failed: %w", msg, err))
	}
	conditions.MarkFalse(obj, helmv2.DriftedCondition, helmv2.DriftCorrectedReason, "%s", "Drift corrected: "+report.Summary())
	r.Events.Normal(ctx, obj, helmv2.DriftCorrectedReason, sc.revision, "Drift corrected: "+report.Summary())
	return outcome.ResultSuccess, nil
}
