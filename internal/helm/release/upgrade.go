package release

import (
	"context"
	"errors"
	"fmt"
	"time"

	"helm.sh/helm/v4/pkg/action"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/kube"
	"helm.sh/helm/v4/pkg/postrenderer"
	rcommon "helm.sh/helm/v4/pkg/release/common"
	releasev1 "helm.sh/helm/v4/pkg/release/v1"
	"helm.sh/helm/v4/pkg/storage/driver"

	helmv2 "github.com/windlass-dev/windlass/api/helm/v2"
)

// UpgradeOptions configure Upgrade.
type UpgradeOptions struct {
	// ReleaseName names the release.
	ReleaseName string
	// Namespace is the release's namespace (the stored release's when
	// empty); a release cannot move to another namespace.
	Namespace string
	// Timeout bounds the action's waits, hooks included (DefaultTimeout
	// when zero).
	Timeout time.Duration
	// Wait waits for the objects to be ready; without it only hooks are
	// waited for.
	Wait bool
	// WaitStrategy is how Wait waits: kube.StatusWatcherStrategy (kstatus,
	// the default) or kube.LegacyStrategy.
	WaitStrategy kube.WaitStrategy
	// WaitForJobs also waits for Jobs to complete.
	WaitForJobs bool
	// DisableHooks skips the chart's hooks.
	DisableHooks bool
	// DisableOpenAPIValidation does not validate the manifests against the
	// server's schema.
	DisableOpenAPIValidation bool
	// DisableSchemaValidation does not validate the values against the
	// chart's values.schema.json.
	DisableSchemaValidation bool
	// CRDs is the policy for the chart's crds/ folders: helmv2.CRDsSkip
	// (the default), helmv2.CRDsCreate or helmv2.CRDsCreateReplace. They
	// are applied before the upgrade.
	CRDs string
	// ServerSideApply is SSAEnabled, SSADisabled or SSAAuto (the default:
	// as the last release was applied). Server-side apply forces its
	// conflicts with other field managers.
	ServerSideApply string
	// TakeOwnership adopts objects that exist and belong to no release.
	TakeOwnership bool
	// Force replaces objects whose update fails, with client-side apply;
	// server-side apply forces conflicts with or without it.
	Force bool
	// PreserveValues merges values over the values of the last release;
	// otherwise the last release's values are not used.
	PreserveValues bool
	// CleanupOnFail deletes the objects that a failed upgrade created.
	CleanupOnFail bool
	// MaxHistory is how many versions are kept (0: all).
	MaxHistory int
	// PostRenderer changes the rendered manifests; nil for none.
	PostRenderer postrenderer.PostRenderer
	// PostRenderStrategy is combined (the default), nohooks or separate.
	PostRenderStrategy string
	// Labels are added to the stored release.
	Labels map[string]string
	// Description is the release's description once deployed.
	Description string
	// Applied, when set, receives after each apply of the action the
	// resourceVersion that the API server gave each object applied.
	Applied AppliedFunc
}

// Upgrade upgrades the release to chart with values, as a new version. The
// chart and values are not changed. On failure the new version is
// returned, marked failed, when it was stored.
func (r *Runner) Upgrade(ctx context.Context, ch *chart.Chart, values map[string]any, opts UpgradeOptions) (*releasev1.Release, error) {
	if ch == nil {
		return nil, errors.New("no chart given")
	}
	name := opts.ReleaseName
	prs, err := postRenderStrategy(opts.PostRenderStrategy)
	if err != nil {
		return nil, err
	}
	policy, err := crdPolicy(opts.CRDs, helmv2.CRDsSkip)
	if err != nil {
		return nil, err
	}
	last, err := r.Last(name)
	if err != nil {
		return nil, err
	}
	if last == nil {
		return nil, fmt.Errorf("upgrading release %s: %w", name, driver.NewErrNoDeployedReleases(name))
	}
	if opts.Namespace != "" && opts.Namespace != last.Namespace {
		return nil, fmt.Errorf("upgrading release %s: it is in namespace %q, not %q", name, last.Namespace, opts.Namespace)
	}
	ssa, err := resolveSSA(opts.ServerSideApply, last.ApplyMethod)
	if err != nil {
		return nil, err
	}
	timeout := timeoutOrDefault(opts.Timeout)
	waitCtx, cancel, err := actionContext(ctx, timeout)
	if err != nil {
		return nil, err
	}
	defer cancel()

	ch = copyChart(ch)
	if err := r.applyCRDs(waitCtx, ch, policy); err != nil {
		return nil, fmt.Errorf("upgrading release %s: %w", name, err)
	}
	cfg, err := r.config(waitCtx, last.Namespace)
	if err != nil {
		return nil, fmt.Errorf("upgrading release %s: %w", name, err)
	}
	observeApplied(cfg, opts.Applied)
	pre, err := r.prerenderUpgrade(ctx, last, ch, values, opts.PreserveValues, cfg.Capabilities, timeout)
	if err != nil {
		return nil, fmt.Errorf("upgrading release %s: %w", name, err)
	}
	restore := pre.keepOriginals(cfg)
	act := action.NewUpgrade(cfg)
	act.Namespace = last.Namespace
	act.Timeout = timeout
	act.WaitStrategy = waitStrategy(opts.Wait, opts.WaitStrategy)
	act.WaitOptions = []kube.WaitOption{kube.WithWaitContext(waitCtx)}
	act.WaitForJobs = opts.WaitForJobs
	act.DisableHooks = opts.DisableHooks
	act.DisableOpenAPIValidation = opts.DisableOpenAPIValidation
	act.SkipSchemaValidation = opts.DisableSchemaValidation
	act.ServerSideApply = ssaFlag(ssa)
	act.ForceConflicts = ssa
	act.ForceReplace = opts.Force && !ssa
	act.TakeOwnership = opts.TakeOwnership
	act.ReuseValues = opts.PreserveValues
	act.ResetValues = !opts.PreserveValues
	act.CleanupOnFail = opts.CleanupOnFail
	act.MaxHistory = opts.MaxHistory
	act.PostRenderer = opts.PostRenderer
	act.PostRenderStrategy = prs
	act.Labels = opts.Labels
	act.Description = opts.Description

	// As for Install: waits end with waitCtx, the SDK gets no context.
	out, err := guard("upgrading", func() (any, error) {
		return act.RunWithContext(context.Background(), name, pre.chart, copyValues(values))
	})
	rel, cerr := toV1Release(out)
	rel = restore(rel)
	if err != nil {
		return rel, fmt.Errorf("upgrading release %s: %w", name, withoutSecrets(err, rel))
	}
	return rel, cerr
}

// RollbackOptions configure Rollback.
type RollbackOptions struct {
	// Version to roll back to; 0 is the version before the last.
	Version int
	// Timeout bounds the action's waits, hooks included (DefaultTimeout
	// when zero).
	Timeout time.Duration
	// Wait waits for the objects to be ready; without it only hooks are
	// waited for.
	Wait bool
	// WaitStrategy is how Wait waits: kube.StatusWatcherStrategy (kstatus,
	// the default) or kube.LegacyStrategy.
	WaitStrategy kube.WaitStrategy
	// WaitForJobs also waits for Jobs to complete.
	WaitForJobs bool
	// DisableHooks skips the chart's hooks.
	DisableHooks bool
	// Force replaces objects whose update fails, with client-side apply;
	// server-side apply forces conflicts with or without it.
	Force bool
	// CleanupOnFail deletes the objects that a failed rollback created.
	CleanupOnFail bool
	// ServerSideApply is SSAEnabled, SSADisabled or SSAAuto (the default:
	// as the version rolled back to was applied). Server-side apply forces
	// its conflicts with other field managers.
	ServerSideApply string
	// MaxHistory is how many versions are kept (0: all).
	MaxHistory int
}

// Rollback makes a new version of the release with the chart, values and
// manifest of an earlier version, and returns it. A rollback whose hooks
// fail is marked failed rather than left pending.
func (r *Runner) Rollback(ctx context.Context, releaseName string, opts RollbackOptions) (*releasev1.Release, error) {
	last, target, err := r.rollbackTarget(releaseName, opts.Version)
	if err != nil {
		return nil, fmt.Errorf("rolling back release %s: %w", releaseName, err)
	}
	ssa, err := resolveSSA(opts.ServerSideApply, target.ApplyMethod)
	if err != nil {
		return nil, err
	}
	timeout := timeoutOrDefault(opts.Timeout)
	waitCtx, cancel, err := actionContext(ctx, timeout)
	if err != nil {
		return nil, err
	}
	defer cancel()
	cfg, err := r.config(waitCtx, last.Namespace)
	if err != nil {
		return nil, fmt.Errorf("rolling back release %s: %w", releaseName, err)
	}
	act := action.NewRollback(cfg)
	act.Version = target.Version
	act.Timeout = timeout
	act.WaitStrategy = waitStrategy(opts.Wait, opts.WaitStrategy)
	act.WaitOptions = []kube.WaitOption{kube.WithWaitContext(waitCtx)}
	act.WaitForJobs = opts.WaitForJobs
	act.DisableHooks = opts.DisableHooks
	act.ServerSideApply = ssaFlag(ssa)
	act.ForceConflicts = ssa
	act.ForceReplace = opts.Force && !ssa
	act.CleanupOnFail = opts.CleanupOnFail
	act.MaxHistory = opts.MaxHistory

	_, runErr := guard("rolling back", func() (struct{}, error) { return struct{}{}, act.Run(releaseName) })
	runErr = withoutSecrets(runErr, target)
	rel, err := r.Last(releaseName)
	if err != nil {
		return nil, errors.Join(runErr, err)
	}
	if runErr == nil {
		return rel, nil
	}
	if rel != nil && rel.Version > last.Version && rel.Info.Status.IsPending() {
		rel.SetStatus(rcommon.StatusFailed, fmt.Sprintf("Rollback %q failed: %s", releaseName, runErr))
		if err := r.update(rel); err != nil {
			runErr = errors.Join(runErr, fmt.Errorf("marking the rollback failed: %w", err))
		}
	}
	return rel, fmt.Errorf("rolling back release %s to v%d: %w", releaseName, target.Version, runErr)
}

// rollbackTarget returns the last release and the one to roll back to.
func (r *Runner) rollbackTarget(name string, version int) (last, target *releasev1.Release, err error) {
	hist, err := r.History(name, 0)
	if err != nil {
		return nil, nil, err
	}
	if len(hist) == 0 {
		return nil, nil, driver.ErrReleaseNotFound
	}
	last = hist[0]
	if version == 0 {
		version = last.Version - 1
	}
	for _, rel := range hist {
		if rel.Version == version {
			return last, rel, nil
		}
	}
	return nil, nil, fmt.Errorf("the release has no version %d", version)
}
