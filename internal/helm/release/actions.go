package release

import (
	"context"
	"fmt"
	"time"

	"helm.sh/helm/v4/pkg/action"
	"helm.sh/helm/v4/pkg/kube"
	rcommon "helm.sh/helm/v4/pkg/release/common"
	releasev1 "helm.sh/helm/v4/pkg/release/v1"

	helmv2 "github.com/windlass-dev/windlass/api/helm/v2"
)

// FieldManager is the server-side apply field manager of what Helm applies
// for a HelmRelease and of drift corrections: the reference
// implementation's, so that a correction leaves no second owner.
const FieldManager = "helm-controller"

// Helm's SDK applies with one field manager per process; Windlass's is
// FieldManager.
func init() { kube.ManagedFieldsManager = FieldManager }

// TestOptions configure Test.
type TestOptions struct {
	// Timeout bounds the whole test run (DefaultTimeout when zero).
	Timeout time.Duration
	// Filters select the tests to run by name: those named without Exclude
	// (all when there are none), minus those named with Exclude.
	Filters []helmv2.Filter
}

// Test runs the test hooks of the last release called releaseName in
// namespace (the release's when empty) and returns the release with the
// hooks' last runs recorded (they are stored too, also when a test fails).
func (r *Runner) Test(ctx context.Context, releaseName, namespace string, opts TestOptions) (*releasev1.Release, error) {
	if namespace == "" {
		last, err := r.Last(releaseName)
		if err != nil {
			return nil, err
		}
		if last != nil {
			namespace = last.Namespace
		}
	}
	timeout := timeoutOrDefault(opts.Timeout)
	waitCtx, cancel, err := actionContext(ctx, timeout)
	if err != nil {
		return nil, err
	}
	defer cancel()
	cfg, err := r.config(waitCtx, namespace)
	if err != nil {
		return nil, fmt.Errorf("testing release %s: %w", releaseName, err)
	}
	act := action.NewReleaseTesting(cfg)
	act.Timeout = timeout
	act.WaitOptions = []kube.WaitOption{kube.WithWaitContext(waitCtx)}
	act.Namespace = namespace
	for _, f := range opts.Filters {
		key := action.IncludeNameFilter
		if f.Exclude {
			key = action.ExcludeNameFilter
		}
		act.Filters[key] = append(act.Filters[key], f.Name)
	}

	type result struct {
		rel      any
		shutdown action.ExecuteShutdownFunc
	}
	res, err := guard("testing", func() (result, error) {
		rel, shutdown, err := act.Run(releaseName)
		return result{rel, shutdown}, err
	})
	if res.shutdown != nil {
		// Deletes the test objects as their hook-delete-policy says.
		if serr := res.shutdown(); serr != nil && err == nil {
			err = fmt.Errorf("deleting the test hooks: %w", serr)
		}
	}
	rel, cerr := toV1Release(res.rel)
	if err != nil {
		return rel, fmt.Errorf("testing release %s: %w", releaseName, err)
	}
	return rel, cerr
}

// UninstallOptions configure Uninstall.
type UninstallOptions struct {
	// Timeout bounds the action's waits, hooks included (DefaultTimeout
	// when zero).
	Timeout time.Duration
	// DisableHooks skips the chart's hooks.
	DisableHooks bool
	// KeepHistory keeps the release's versions, the last marked
	// uninstalled; otherwise they are deleted.
	KeepHistory bool
	// Wait waits for the objects to be gone.
	Wait bool
	// DeletionPropagation is background (the default), foreground or
	// orphan.
	DeletionPropagation string
}

// Uninstall deletes the objects of the release called releaseName and its
// history (or marks it uninstalled with KeepHistory). It returns the
// release it uninstalled, or nil when there is none, which is no error.
func (r *Runner) Uninstall(ctx context.Context, releaseName string, opts UninstallOptions) (*releasev1.Release, error) {
	switch opts.DeletionPropagation {
	case "", "background", "foreground", "orphan":
	default:
		return nil, fmt.Errorf("unknown deletion propagation %q", opts.DeletionPropagation)
	}
	last, err := r.Last(releaseName)
	if err != nil || last == nil {
		return nil, err
	}
	if last.Info.Status == rcommon.StatusUninstalled && opts.KeepHistory {
		return last, nil
	}
	timeout := timeoutOrDefault(opts.Timeout)
	waitCtx, cancel, err := actionContext(ctx, timeout)
	if err != nil {
		return nil, err
	}
	defer cancel()
	cfg, err := r.config(waitCtx, last.Namespace)
	if err != nil {
		return nil, fmt.Errorf("uninstalling release %s: %w", releaseName, err)
	}
	act := action.NewUninstall(cfg)
	act.Timeout = timeout
	act.DisableHooks = opts.DisableHooks
	act.KeepHistory = opts.KeepHistory
	act.WaitStrategy = waitStrategy(opts.Wait, "")
	act.WaitOptions = []kube.WaitOption{kube.WithWaitContext(waitCtx)}
	act.DeletionPropagation = opts.DeletionPropagation
	if act.DeletionPropagation == "" {
		act.DeletionPropagation = "background"
	}
	res, err := guard("uninstalling", func() (any, error) {
		res, err := act.Run(releaseName)
		if res == nil {
			return nil, err
		}
		return res.Release, err
	})
	rel, cerr := toV1Release(res)
	if err != nil {
		return rel, fmt.Errorf("uninstalling release %s: %w", releaseName, err)
	}
	return rel, cerr
}
