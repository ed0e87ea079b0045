package helm

import (
	"context"
	"fmt"
	"time"

	hcommon "helm.sh/helm/v4/pkg/release/common"
	hrelease "helm.sh/helm/v4/pkg/release/v1"

	helmv2 "github.com/windlass-dev/windlass/api/helm/v2"
	"github.com/windlass-dev/windlass/internal/conditions"
	helmaction "github.com/windlass-dev/windlass/internal/helm/release"
	"github.com/windlass-dev/windlass/internal/reconcile/outcome"
)

// failed records the failure of an install or upgrade, remediates it as
// configured, and returns the error the run ends with: a failure retried
// while retries remain, Stalled once they are used up.
func (r *HelmReleaseReconciler) failed(ctx context.Context, obj *helmv2.HelmRelease, sc *releaseScope, action string, cause error) error {
	reason := helmv2.InstallFailedReason
	obj.Status.Failures++
	failures := &obj.Status.InstallFailures
	retries, remediateLast := obj.GetInstall().Remediation.GetRetries(), obj.GetInstall().Remediation.MustRemediateLastFailure()
	strategy := obj.GetInstall().Strategy
	if action == helmv2.ReleaseActionUpgrade {
		reason = helmv2.UpgradeFailedReason
		failures = &obj.Status.UpgradeFailures
		retries, remediateLast = obj.GetUpgrade().Remediation.GetRetries(), obj.GetUpgrade().Remediation.MustRemediateLastFailure()
		strategy = obj.GetUpgrade().Strategy
	}
	*failures++
	msg := fmt.Sprintf("Helm %s failed for release %s/%s with chart %s@%s: %v", action, obj.GetReleaseNamespace(),
		obj.GetReleaseName(), sc.chart.Metadata.Name, sc.chart.Metadata.Version, cause)
	conditions.MarkFalse(obj, helmv2.ReleasedCondition, reason, "%s", msg)
	if retriesOnFailure(strategy) {
		return outcome.FailRetryAfter(reason, fmt.Errorf("%s; retrying", msg), retryInterval(strategy))
	}
	remaining := retries < 0 || *failures <= int64(retries)
	if remaining || remediateLast {
		if err := r.remediate(ctx, obj, sc, action); err != nil {
			return outcome.Fail(reason, fmt.Errorf("%s; remediation failed: %w", msg, err))
		}
	}
	if !remaining {
		return outcome.Stall(helmv2.RetriesExceededReason, fmt.Errorf("%s (retries exhausted after %d attempt(s))", msg, *failures))
	}
	return outcome.Fail(reason, fmt.Errorf("%s", msg))
}

// retryInterval is the interval between retries under RetryOnFailure.
func retryInterval(s *helmv2.ActionStrategy) time.Duration {
	if s.RetryInterval != nil && s.RetryInterval.Duration > 0 {
		return s.RetryInterval.Duration
	}
	return helmv2.DefaultRetryInterval
}

// remediate undoes a failed action: a failed install is uninstalled, a
// failed upgrade rolled back to the last good release (or uninstalled,
// as configured).
func (r *HelmReleaseReconciler) remediate(ctx context.Context, obj *helmv2.HelmRelease, sc *releaseScope, action string) error {
	name := obj.GetReleaseName()
	if action == helmv2.ReleaseActionUpgrade && obj.GetUpgrade().Remediation.GetStrategy() == helmv2.RemediationRollback {
		return r.rollback(ctx, obj, sc, name)
	}
	u := obj.GetUninstall()
	_, err := helmAction(actionUninstall, func() (*hrelease.Release, error) {
		return sc.runner.Uninstall(ctx, name, helmaction.UninstallOptions{
			Timeout: obj.ActionTimeout(u.Timeout), DisableHooks: u.DisableHooks, KeepHistory: u.KeepHistory,
			Wait: !u.DisableWait, DeletionPropagation: deletionPropagation(u),
		})
	})
	if err != nil {
		conditions.MarkFalse(obj, helmv2.RemediatedCondition, helmv2.UninstallFailedReason, "Helm uninstall failed: %v", err)
		return err
	}
	sc.last = nil
	msg := fmt.Sprintf("Helm uninstall succeeded for release %s/%s after a failed %s", obj.GetReleaseNamespace(), name, action)
	conditions.MarkTrue(obj, helmv2.RemediatedCondition, helmv2.UninstallSucceededReason, "%s", msg)
	r.Events.Normal(ctx, obj, helmv2.UninstallSucceededReason, sc.revision, msg)
	return nil
}

// rollback rolls the release back to the last release that was deployed
// before the failed upgrade; with none there is nothing to roll back to.
func (r *HelmReleaseReconciler) rollback(ctx context.Context, obj *helmv2.HelmRelease, sc *releaseScope, name string) error {
	history, err := sc.runner.History(name, 0)
	if err != nil {
		return err
	}
	target := 0
	for _, rel := range history {
		if rel.Info.Status == hcommon.StatusSuperseded || rel.Info.Status == hcommon.StatusDeployed {
			if rel.Version > target && (sc.last == nil || rel.Version < sc.last.Version) {
				target = rel.Version
			}
		}
	}
	if target == 0 {
		return fmt.Errorf("no earlier release of %s to roll back to", name)
	}
	rb := obj.GetRollback()
	rel, err := helmAction(actionRollback, func() (*hrelease.Release, error) {
		return sc.runner.Rollback(ctx, name, helmaction.RollbackOptions{
			Version: target, Timeout: obj.ActionTimeout(rb.Timeout), Wait: !rb.DisableWait, WaitStrategy: waitStrategy(obj),
			WaitForJobs:  !rb.DisableWaitForJobs,
			DisableHooks: rb.DisableHooks, Force: rb.Force, CleanupOnFail: rb.CleanupOnFail, ServerSideApply: rb.ServerSideApply,
			MaxHistory: obj.GetMaxHistory(),
		})
	})
	if err != nil {
		conditions.MarkFalse(obj, helmv2.RemediatedCondition, helmv2.RollbackFailedReason, "Helm rollback to v%d failed: %v", target, err)
		return err
	}
	sc.last = rel
	msg := fmt.Sprintf("Helm rollback to previous release %s/%s.v%d succeeded", obj.GetReleaseNamespace(), name, target)
	conditions.MarkTrue(obj, helmv2.RemediatedCondition, helmv2.RollbackSucceededReason, "%s", msg)
	r.Events.Normal(ctx, obj, helmv2.RollbackSucceededReason, sc.revision, msg)
	return nil
}

func deletionPropagation(u helmv2.Uninstall) string {
	if u.DeletionPropagation == nil {
		return "background"
	}
	return *u.DeletionPropagation
}
