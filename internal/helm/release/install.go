package release

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync/atomic"
	"time"

	"helm.sh/helm/v4/pkg/action"
	"helm.sh/helm/v4/pkg/chart/common"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/kube"
	"helm.sh/helm/v4/pkg/postrenderer"
	helmrelease "helm.sh/helm/v4/pkg/release"
	releasev1 "helm.sh/helm/v4/pkg/release/v1"
	"helm.sh/helm/v4/pkg/storage/driver"

	helmv2 "github.com/windlass-dev/windlass/api/helm/v2"
)

// InstallOptions configure Install.
type InstallOptions struct {
	// ReleaseName names the release.
	ReleaseName string
	// Namespace is where the chart's namespaced objects go.
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
	// Replace reuses the name of a failed or uninstalled release.
	Replace bool
	// CRDs is the policy for the chart's crds/ folders: helmv2.CRDsSkip,
	// helmv2.CRDsCreate (the default) or helmv2.CRDsCreateReplace.
	CRDs string
	// CreateNamespace creates Namespace when it does not exist.
	CreateNamespace bool
	// ServerSideApply applies with server-side apply (the HelmRelease
	// default) rather than client-side apply; its conflicts with other
	// field managers (a release made by the helm CLI, kubectl) are
	// forced.
	ServerSideApply bool
	// TakeOwnership adopts objects that exist and belong to no release.
	TakeOwnership bool
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
	// Absent tells that the caller read the release storage just before
	// (RecoverPending) and found no release of the name: the action's own
	// check that the name is free is answered from that read instead of a
	// second list. Storing the first record is what guards the name: it
	// fails if a record of that version appeared since.
	Absent bool
}

// Install installs chart with values as a new release (version 1, or the
// next version of a failed or uninstalled release with Replace). The chart
// and values are not changed. On failure the release is returned when it
// was stored, marked failed.
func (r *Runner) Install(ctx context.Context, ch *chart.Chart, values map[string]any, opts InstallOptions) (*releasev1.Release, error) {
	if ch == nil {
		return nil, errors.New("no chart given")
	}
	if opts.Namespace == "" {
		return nil, fmt.Errorf("installing release %s: no namespace given", opts.ReleaseName)
	}
	prs, err := postRenderStrategy(opts.PostRenderStrategy)
	if err != nil {
		return nil, err
	}
	policy, err := crdPolicy(opts.CRDs, helmv2.CRDsCreate)
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
		return nil, fmt.Errorf("installing release %s: %w", opts.ReleaseName, err)
	}
	cfg, rec, err := r.recordedConfig(waitCtx, opts.Namespace)
	if err != nil {
		return nil, fmt.Errorf("installing release %s: %w", opts.ReleaseName, err)
	}
	observeApplied(cfg, opts.Applied)
	if opts.Absent {
		cfg.Releases.Driver = &absentOnce{Driver: cfg.Releases.Driver, name: opts.ReleaseName}
	}
	pre, err := r.prerender(ctx, ch, values, installRelease(opts.ReleaseName, opts.Namespace), cfg.Capabilities, true, timeout)
	if err != nil {
		return nil, fmt.Errorf("installing release %s: %w", opts.ReleaseName, err)
	}
	restore := pre.keepOriginals(cfg)
	act := action.NewInstall(cfg)
	act.ReleaseName = opts.ReleaseName
	act.Namespace = opts.Namespace
	act.Timeout = timeout
	act.WaitStrategy = waitStrategy(opts.Wait, opts.WaitStrategy)
	act.WaitOptions = []kube.WaitOption{kube.WithWaitContext(waitCtx)}
	act.WaitForJobs = opts.WaitForJobs
	act.DisableHooks = opts.DisableHooks
	act.DisableOpenAPIValidation = opts.DisableOpenAPIValidation
	act.SkipSchemaValidation = opts.DisableSchemaValidation
	act.Replace = opts.Replace
	act.SkipCRDs = true // applied above
	act.CreateNamespace = opts.CreateNamespace
	act.ServerSideApply = opts.ServerSideApply
	act.ForceConflicts = opts.ServerSideApply
	act.TakeOwnership = opts.TakeOwnership
	act.PostRenderer = opts.PostRenderer
	act.PostRenderStrategy = prs
	act.Labels = opts.Labels
	act.Description = opts.Description

	// Waits end with waitCtx; the SDK's own context handling would leave
	// the install running in the background, so it gets none.
	out, err := guard("installing", func() (any, error) {
		return act.RunWithContext(context.Background(), pre.chart, copyValues(values))
	})
	rel, cerr := toV1Release(out)
	rel = restore(rel)
	if err != nil {
		return rel, fmt.Errorf("installing release %s: %w", opts.ReleaseName, withoutSecrets(err, rel))
	}
	if cerr == nil {
		// The install's last write stored rel: the next run need not
		// read it back.
		r.remember(rec, rel)
	}
	return rel, cerr
}

// absentOnce is a release storage driver that answers the first query of
// the history of release name with none, without a request: the caller
// has just read it.
type absentOnce struct {
	driver.Driver
	name     string
	answered atomic.Bool
}

// Query implements driver.Driver.
func (d *absentOnce) Query(labels map[string]string) ([]helmrelease.Releaser, error) {
	history := len(labels) == 2 && labels["name"] == d.name && labels["owner"] == "helm"
	if history && d.answered.CompareAndSwap(false, true) {
		return nil, driver.ErrReleaseNotFound
	}
	return d.Driver.Query(labels)
}

// installRelease is the release that the templates of an install see.
func installRelease(name, namespace string) common.ReleaseOptions {
	return common.ReleaseOptions{Name: name, Namespace: namespace, Revision: 1, IsInstall: true}
}

// RenderOptions configure Render.
type RenderOptions struct {
	// ReleaseName names the release.
	ReleaseName string
	// Namespace is the release's namespace.
	Namespace string
	// PostRenderer changes the rendered manifests; nil for none.
	PostRenderer postrenderer.PostRenderer
	// PostRenderStrategy is combined (the default), nohooks or separate.
	PostRenderStrategy string
	// IncludeCRDs puts the chart's crds/ files first in the manifest.
	IncludeCRDs bool
	// KubeVersion is the Kubernetes version templates see with ClientOnly
	// (Helm's default when empty).
	KubeVersion string
	// APIVersions are added to the API versions templates see with
	// ClientOnly.
	APIVersions []string
	// ClientOnly renders without the cluster; otherwise the cluster's
	// capabilities are used and templates can look objects up.
	ClientOnly bool
}

// Render renders chart with values as Install would apply it, without
// changing anything in the cluster, and returns the manifest (as the
// release stores it) and the hooks.
func (r *Runner) Render(ctx context.Context, ch *chart.Chart, values map[string]any, opts RenderOptions) (string, []*releasev1.Hook, error) {
	if ch == nil {
		return "", nil, errors.New("no chart given")
	}
	prs, err := postRenderStrategy(opts.PostRenderStrategy)
	if err != nil {
		return "", nil, err
	}
	act, caps, err := r.renderAction(ctx, opts)
	if err != nil {
		return "", nil, fmt.Errorf("rendering release %s: %w", opts.ReleaseName, err)
	}
	ch = copyChart(ch)
	pre, err := r.prerender(ctx, ch, values, installRelease(opts.ReleaseName, opts.Namespace), caps, !opts.ClientOnly, DefaultTimeout)
	if err != nil {
		return "", nil, fmt.Errorf("rendering release %s: %w", opts.ReleaseName, err)
	}
	act.ReleaseName = opts.ReleaseName
	act.Namespace = opts.Namespace
	act.PostRenderer = opts.PostRenderer
	act.PostRenderStrategy = prs
	act.IncludeCRDs = opts.IncludeCRDs
	act.Replace = true
	// Ownership is not checked: nothing is applied.
	act.TakeOwnership = true
	out, err := guard("rendering", func() (any, error) {
		return act.RunWithContext(ctx, pre.chart, copyValues(values))
	})
	if err != nil {
		return "", nil, fmt.Errorf("rendering release %s: %w", opts.ReleaseName, err)
	}
	rel, err := toV1Release(out)
	if err != nil || rel == nil {
		return "", nil, fmt.Errorf("rendering release %s: no release rendered: %w", opts.ReleaseName, err)
	}
	return rel.Manifest, rel.Hooks, nil
}

// renderAction returns the dry-run install action of Render and the
// capabilities its templates see.
func (r *Runner) renderAction(ctx context.Context, opts RenderOptions) (*action.Install, *common.Capabilities, error) {
	if !opts.ClientOnly {
		if r.getter == nil {
			return nil, nil, errNoCluster
		}
		cfg, err := r.config(ctx, opts.Namespace)
		if err != nil {
			return nil, nil, err
		}
		act := action.NewInstall(cfg)
		act.DryRunStrategy = action.DryRunServer
		return act, cfg.Capabilities, nil
	}
	cfg := action.NewConfiguration(action.ConfigurationSetLogger(r.log))
	cfg.SetHookOutputFunc(func(_, _, _ string) io.Writer { return io.Discard })
	act := action.NewInstall(cfg)
	act.DryRunStrategy = action.DryRunClient
	if opts.KubeVersion != "" {
		kv, err := common.ParseKubeVersion(opts.KubeVersion)
		if err != nil {
			return nil, nil, fmt.Errorf("parsing the Kubernetes version %q: %w", opts.KubeVersion, err)
		}
		act.KubeVersion = kv
	}
	act.APIVersions = append(common.VersionSet(nil), opts.APIVersions...)
	// As the action sets them when it runs without the cluster.
	caps := common.DefaultCapabilities.Copy()
	if act.KubeVersion != nil {
		caps.KubeVersion = *act.KubeVersion
	}
	caps.APIVersions = append(slices.Clone(caps.APIVersions), act.APIVersions...)
	return act, caps, nil
}
