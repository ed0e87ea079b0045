package helm

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"time"

	hchart "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/postrenderer"
	hcommon "helm.sh/helm/v4/pkg/release/common"
	hrelease "helm.sh/helm/v4/pkg/release/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	helmv2 "github.com/windlass-dev/windlass/api/helm/v2"
	"github.com/windlass-dev/windlass/api/meta"
	"github.com/windlass-dev/windlass/internal/conditions"
	helmaction "github.com/windlass-dev/windlass/internal/helm/release"
	"github.com/windlass-dev/windlass/internal/impersonation"
	"github.com/windlass-dev/windlass/internal/inventory"
	"github.com/windlass-dev/windlass/internal/reconcile/outcome"
)

// releaseScope is what the release steps of one run share.
type releaseScope struct {
	chart        *hchart.Chart
	revision     string
	digest       string
	values       map[string]any
	configDigest string
	postRenderer postrenderer.PostRenderer
	runner       *helmaction.Runner
	target       *impersonation.Target
	// last is the release as it is after the run's action, or nil.
	last *hrelease.Release
	// acted is set when the run changed the release's records.
	acted bool
	// installedFirst is set when the run installed a name that had no
	// record: the release it made is then the whole history.
	installedFirst bool
	// applied holds the fields versions that the applies of the run's
	// install or upgrade left the release's objects at; appliedVersion is the version
	// of the release they made, once it deployed.
	applied        map[inventory.ObjMetadata]string
	appliedVersion int
}

// observeApplied records the fields versions an apply of the run's
// action left objects at (a helmaction.AppliedFunc).
func (sc *releaseScope) observeApplied(versions map[inventory.ObjMetadata]string) {
	if sc.applied == nil {
		sc.applied = map[inventory.ObjMetadata]string{}
	}
	maps.Copy(sc.applied, versions)
}

// desired tells whether rel is the release that obj declares: the same
// chart, version and values, made with the same post-renderers and common
// metadata.
func desired(obj *helmv2.HelmRelease, sc *releaseScope, rel *hrelease.Release, prDigest, cmDigest string) bool {
	if rel == nil || rel.Chart == nil || rel.Chart.Metadata == nil {
		return false
	}
	return rel.Chart.Metadata.Name == sc.chart.Metadata.Name &&
		rel.Chart.Metadata.Version == sc.chart.Metadata.Version &&
		helmaction.ConfigDigest(rel.Config) == sc.configDigest &&
		obj.Status.ObservedPostRenderersDigest == prDigest &&
		obj.Status.ObservedCommonMetadataDigest == cmDigest
}

// attemptChanged tells whether what the run would attempt differs from the
// last attempt: a new generation, chart revision or values. Failure counters
// start afresh then.
func attemptChanged(obj *helmv2.HelmRelease, sc *releaseScope) bool {
	s := obj.Status
	return s.LastAttemptedGeneration != obj.Generation || s.LastAttemptedRevision != sc.revision ||
		s.LastAttemptedConfigDigest != sc.configDigest
}

// resetFailures zeroes the failure counters.
func resetFailures(obj *helmv2.HelmRelease) {
	obj.Status.Failures, obj.Status.InstallFailures, obj.Status.UpgradeFailures = 0, 0, 0
}

// handleRequests acts on the reset and force requests of obj's annotations
// and tells whether a force is asked for.
func handleRequests(obj *helmv2.HelmRelease) (force bool) {
	if token, ok := obj.Annotations[meta.ResetRequestAnnotation]; ok && token != obj.Status.LastHandledResetAt {
		resetFailures(obj)
		obj.Status.LastHandledResetAt = token
	}
	if token, ok := obj.Annotations[meta.ForceRequestAnnotation]; ok && token != obj.Status.LastHandledForceAt {
		obj.Status.LastHandledForceAt = token
		return true
	}
	return false
}

// exhausted tells whether the failures of the last action used up its
// retries, so that nothing is tried until the spec, the chart or the
// values change, or a reset is asked for. An action whose strategy is
// RetryOnFailure is retried for as long as it fails: it never runs out.
func exhausted(obj *helmv2.HelmRelease) bool {
	switch obj.Status.LastAttemptedReleaseAction {
	case helmv2.ReleaseActionInstall:
		in := obj.GetInstall()
		r := in.Remediation
		return !retriesOnFailure(in.Strategy) && r.GetRetries() >= 0 && obj.Status.InstallFailures > int64(r.GetRetries())
	case helmv2.ReleaseActionUpgrade:
		up := obj.GetUpgrade()
		r := up.Remediation
		return !retriesOnFailure(up.Strategy) && r.GetRetries() >= 0 && obj.Status.UpgradeFailures > int64(r.GetRetries())
	}
	return false
}

// retriesOnFailure tells whether an action's strategy is RetryOnFailure:
// a failure is tried again after the retry interval, not remediated.
func retriesOnFailure(s *helmv2.ActionStrategy) bool {
	return s != nil && s.Name == helmv2.ActionStrategyRetryOnFailure
}

// retriesExceeded is the Stalling error of a release whose retries are
// used up.
func retriesExceeded(obj *helmv2.HelmRelease) error {
	n := obj.Status.InstallFailures
	if obj.Status.LastAttemptedReleaseAction == helmv2.ReleaseActionUpgrade {
		n = obj.Status.UpgradeFailures
	}
	return outcome.Stall(helmv2.RetriesExceededReason,
		fmt.Errorf("failed to %s after %d attempt(s): change the spec, the chart or the values, or reset with 'windlass reconcile helmrelease %s --reset'",
			obj.Status.LastAttemptedReleaseAction, n, obj.Name))
}

// reconcileRelease installs or upgrades the release when it is not what obj
// declares, or not obj's (a takeover), tests it, and remediates a failure
// as configured.
func (r *HelmReleaseReconciler) reconcileRelease(ctx context.Context, obj *helmv2.HelmRelease, sc *releaseScope, force bool) error {
	last, err := r.lastRelease(ctx, obj, sc)
	if err != nil {
		return err
	}
	prDigest, cmDigest := r.digests(obj)
	takeover := foreign(obj, last)
	if !force && !takeover && last != nil && last.Info.Status == hcommon.StatusDeployed && desired(obj, sc, last, prDigest, cmDigest) {
		sc.last = last
		return nil
	}
	if attemptChanged(obj, sc) {
		resetFailures(obj)
	} else if !force && exhausted(obj) {
		if !takeover { // a release another tool made is not recorded as obj's
			sc.last = last
		}
		return retriesExceeded(obj)
	}
	if takeover {
		if err := r.checkTakeover(ctx, obj, sc, last); err != nil {
			return err
		}
	}
	actCtx, done := r.actions.start(ctx, obj, sc)
	defer done()
	action, err := r.act(actCtx, obj, sc, last)
	if err == nil {
		err = r.test(actCtx, obj, sc)
	}
	if s := supersededBy(actCtx); err != nil && s != nil {
		return r.superseded(ctx, obj, sc, action, s)
	}
	if err != nil {
		return r.failed(ctx, obj, sc, action, err)
	}
	resetFailures(obj)
	obj.Status.ObservedPostRenderersDigest, obj.Status.ObservedCommonMetadataDigest = prDigest, cmDigest
	conditions.Delete(obj, helmv2.RemediatedCondition)
	return nil
}

// lastRelease returns the newest release of obj's name, or nil; one left
// pending by an interrupted action is marked failed first.
func (r *HelmReleaseReconciler) lastRelease(ctx context.Context, obj *helmv2.HelmRelease, sc *releaseScope) (*hrelease.Release, error) {
	name := obj.GetReleaseName()
	last, recovered, err := sc.runner.RecoverPending(ctx, name)
	if err != nil {
		return nil, outcome.Fail(helmv2.GetLastReleaseFailedReason, fmt.Errorf("reading the release: %w", err))
	}
	if recovered {
		sc.acted = true
		r.Events.Warning(ctx, obj, helmv2.GetLastReleaseFailedReason, sc.revision,
			fmt.Sprintf("Release %s/%s.v%d was left %s by an interrupted action: marked failed", last.Namespace,
				last.Name, last.Version, "pending"))
	}
	return last, nil
}

// act runs the install or upgrade that brings the release to what obj
// declares, and records the attempt.
func (r *HelmReleaseReconciler) act(ctx context.Context, obj *helmv2.HelmRelease, sc *releaseScope, last *hrelease.Release) (string, error) {
	action := helmv2.ReleaseActionUpgrade
	if last == nil || last.Info.Status == hcommon.StatusUninstalled || neverDeployed(last) || chartRenamed(obj, sc, last) {
		action = helmv2.ReleaseActionInstall
	}
	obj.Status.LastAttemptedReleaseAction = action
	obj.Status.LastAttemptedGeneration = obj.Generation
	obj.Status.LastAttemptedRevision = sc.revision
	obj.Status.LastAttemptedRevisionDigest = sc.digest
	obj.Status.LastAttemptedConfigDigest = sc.configDigest
	started := time.Now()
	sc.acted = true
	var (
		rel *hrelease.Release
		err error
	)
	if action == helmv2.ReleaseActionInstall {
		sc.installedFirst = last == nil
		rel, err = r.install(ctx, obj, sc, last)
	} else {
		rel, err = helmAction(helmv2.ReleaseActionUpgrade, func() (*hrelease.Release, error) {
			return sc.runner.Upgrade(ctx, sc.chart, sc.values, upgradeOptions(obj, sc))
		})
	}
	obj.Status.LastAttemptedReleaseActionDuration = &metav1.Duration{Duration: time.Since(started).Round(time.Millisecond)}
	if rel != nil {
		sc.last = rel
	}
	if err != nil {
		sc.applied = nil
		return action, err
	}
	sc.appliedVersion = rel.Version
	msg := fmt.Sprintf("Helm %s succeeded for release %s/%s.v%d with chart %s@%s", action, rel.Namespace, rel.Name, rel.Version,
		rel.Chart.Metadata.Name, rel.Chart.Metadata.Version)
	reason := helmv2.InstallSucceededReason
	if action == helmv2.ReleaseActionUpgrade {
		reason = helmv2.UpgradeSucceededReason
	}
	conditions.MarkTrue(obj, helmv2.ReleasedCondition, reason, "%s", msg)
	r.Events.Normal(ctx, obj, reason, sc.revision, msg)
	return action, nil
}

// install installs the release; one left from a failed install, another
// chart (under the Reinstall strategy) or an uninstall that kept its
// history is removed first.
func (r *HelmReleaseReconciler) install(ctx context.Context, obj *helmv2.HelmRelease, sc *releaseScope, last *hrelease.Release) (*hrelease.Release, error) {
	if last != nil && last.Info.Status != hcommon.StatusUninstalled {
		_, err := helmAction(actionUninstall, func() (*hrelease.Release, error) {
			return sc.runner.Uninstall(ctx, last.Name, helmaction.UninstallOptions{Timeout: obj.GetTimeout()})
		})
		if err != nil {
			return nil, fmt.Errorf("uninstalling release %s/%s.v%d to install it afresh: %w", last.Namespace, last.Name, last.Version, err)
		}
	}
	return helmAction(helmv2.ReleaseActionInstall, func() (*hrelease.Release, error) {
		opts := installOptions(obj, sc, last != nil)
		opts.Absent = last == nil // lastRelease read the storage this run
		return sc.runner.Install(ctx, sc.chart, sc.values, opts)
	})
}

// neverDeployed tells whether last is the first release and it failed (an
// install that failed or was interrupted): it cannot be upgraded.
func neverDeployed(last *hrelease.Release) bool {
	return last.Version == 1 && last.Info.Status != hcommon.StatusDeployed
}

// chartRenamed tells whether the chart's name changed and the strategy is
// to reinstall then.
func chartRenamed(obj *helmv2.HelmRelease, sc *releaseScope, last *hrelease.Release) bool {
	return last.Chart != nil && last.Chart.Metadata != nil && last.Chart.Metadata.Name != sc.chart.Metadata.Name &&
		obj.GetUpgrade().ChartNameChangeStrategy != "InPlaceUpdate"
}

// test runs the release's tests when enabled; a failure counts unless the
// tests or the remediation ignore it.
func (r *HelmReleaseReconciler) test(ctx context.Context, obj *helmv2.HelmRelease, sc *releaseScope) error {
	t := obj.GetTest()
	if !t.Enable {
		conditions.Delete(obj, helmv2.TestSuccessCondition)
		return nil
	}
	name := obj.GetReleaseName()
	rel, err := helmAction(actionTest, func() (*hrelease.Release, error) {
		return sc.runner.Test(ctx, name, obj.GetReleaseNamespace(), helmaction.TestOptions{
			Timeout: obj.ActionTimeout(t.Timeout), Filters: t.Filters,
		})
	})
	if rel != nil {
		sc.last = rel
	}
	if err == nil {
		msg := fmt.Sprintf("Helm test succeeded for release %s/%s.v%d", obj.GetReleaseNamespace(), name, sc.last.Version)
		conditions.MarkTrue(obj, helmv2.TestSuccessCondition, helmv2.TestSucceededReason, "%s", msg)
		r.Events.Normal(ctx, obj, helmv2.TestSucceededReason, sc.revision, msg)
		return nil
	}
	msg := fmt.Sprintf("Helm test failed for release %s/%s: %v", obj.GetReleaseNamespace(), name, err)
	conditions.MarkFalse(obj, helmv2.TestSuccessCondition, helmv2.TestFailedReason, "%s", msg)
	if t.IgnoreFailures || ignoresTestFailures(obj) {
		r.Events.Warning(ctx, obj, helmv2.TestFailedReason, sc.revision, msg+" (ignored)")
		return nil
	}
	return errors.New(msg)
}

// ignoresTestFailures tells whether the remediation of the last action
// ignores test failures.
func ignoresTestFailures(obj *helmv2.HelmRelease) bool {
	var ignore *bool
	if obj.Status.LastAttemptedReleaseAction == helmv2.ReleaseActionInstall {
		if rem := obj.GetInstall().Remediation; rem != nil {
			ignore = rem.IgnoreTestFailures
		}
	} else if rem := obj.GetUpgrade().Remediation; rem != nil {
		ignore = rem.IgnoreTestFailures
	}
	if ignore == nil && obj.Spec.Test != nil {
		return obj.Spec.Test.IgnoreFailures
	}
	return ignore != nil && *ignore
}
