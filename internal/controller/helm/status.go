package helm

import (
	"context"
	"fmt"
	"sort"

	hrelease "helm.sh/helm/v4/pkg/release/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	helmv2 "github.com/windlass-dev/windlass/api/helm/v2"
	"github.com/windlass-dev/windlass/api/meta"
	helmaction "github.com/windlass-dev/windlass/internal/helm/release"
)

// snapshots returns the history snapshots of releases, newest first, at
// most max of them (0: all).
func snapshots(releases []*hrelease.Release, max int) helmv2.Snapshots {
	sorted := append([]*hrelease.Release(nil), releases...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Version > sorted[j].Version })
	if max > 0 && len(sorted) > max {
		sorted = sorted[:max]
	}
	out := make(helmv2.Snapshots, 0, len(sorted))
	for _, rel := range sorted {
		out = append(out, helmaction.Snapshot(rel))
	}
	return out
}

// finalize uninstalls the release of a deleted HelmRelease, unless it is
// suspended, and deletes the HelmChart made from its template.
func (r *HelmReleaseReconciler) finalize(ctx context.Context, obj *helmv2.HelmRelease) error {
	r.synced.forget(client.ObjectKeyFromObject(obj))
	if !obj.Spec.Suspend {
		if err := r.uninstall(ctx, obj); err != nil {
			return err
		}
	}
	return r.deleteChartTemplate(ctx, obj)
}

// uninstall uninstalls obj's release, as spec.uninstall says.
func (r *HelmReleaseReconciler) uninstall(ctx context.Context, obj *helmv2.HelmRelease) error {
	latest := obj.Status.History.Latest()
	if latest == nil {
		return nil
	}
	if err := unservedKubeConfig(obj); err != nil {
		// The release's cluster cannot be reached: it is left in place.
		r.Events.Warning(ctx, obj, meta.UnsupportedKubeConfigReason, latest.ChartVersion, "the release is left in place: "+err.Error())
		return nil
	}
	t, err := r.target(ctx, obj)
	if err != nil {
		return err
	}
	storage := obj.Status.StorageNamespace
	if storage == "" {
		storage = obj.GetStorageNamespace()
	}
	run, err := r.runners.get(t, storage, r.local(obj))
	if err != nil {
		return err
	}
	u := obj.GetUninstall()
	_, err = helmAction(actionUninstall, func() (*hrelease.Release, error) {
		return run.Uninstall(ctx, latest.Name, helmaction.UninstallOptions{
			Timeout: obj.ActionTimeout(u.Timeout), DisableHooks: u.DisableHooks, KeepHistory: u.KeepHistory,
			Wait: !u.DisableWait, DeletionPropagation: deletionPropagation(u),
		})
	})
	if err != nil {
		return fmt.Errorf("uninstalling release %s/%s: %w", latest.Namespace, latest.Name, err)
	}
	r.Events.Normal(ctx, obj, helmv2.UninstallSucceededReason, obj.Status.LastAttemptedRevision,
		fmt.Sprintf("Helm uninstall succeeded for release %s/%s", latest.Namespace, latest.Name))
	return nil
}
