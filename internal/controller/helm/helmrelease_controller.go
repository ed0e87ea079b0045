package helm

import (
	"context"
	"fmt"
	"sync"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	helmv2 "github.com/windlass-dev/windlass/api/helm/v2"
	kustomizev1 "github.com/windlass-dev/windlass/api/kustomize/v1"
	"github.com/windlass-dev/windlass/api/meta"
	"github.com/windlass-dev/windlass/internal/conditions"
	"github.com/windlass-dev/windlass/internal/event"
	"github.com/windlass-dev/windlass/internal/fetch"
	"github.com/windlass-dev/windlass/internal/health"
	helmaction "github.com/windlass-dev/windlass/internal/helm/release"
	"github.com/windlass-dev/windlass/internal/helm/sandbox"
	"github.com/windlass-dev/windlass/internal/impersonation"
	"github.com/windlass-dev/windlass/internal/kinds"
	"github.com/windlass-dev/windlass/internal/patch"
	"github.com/windlass-dev/windlass/internal/reconcile"
	"github.com/windlass-dev/windlass/internal/reconcile/dependency"
	"github.com/windlass-dev/windlass/internal/reconcile/outcome"
)

// +kubebuilder:rbac:groups=helm.toolkit.fluxcd.io,resources=helmreleases,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=helm.toolkit.fluxcd.io,resources=helmreleases/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=helm.toolkit.fluxcd.io,resources=helmreleases/finalizers,verbs=get;create;update;patch;delete
// +kubebuilder:rbac:groups=source.toolkit.fluxcd.io,resources=helmcharts,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=source.toolkit.fluxcd.io,resources=ocirepositories,verbs=get;list;watch
// +kubebuilder:rbac:groups=kustomize.toolkit.fluxcd.io,resources=kustomizations,verbs=get;list;watch
// +kubebuilder:rbac:groups=gating.toolkit.fluxcd.io,resources=gates,verbs=get;list;watch
// +kubebuilder:rbac:groups="*",resources="*",verbs="*"

// DefaultMaxChartSize bounds the size of a packaged chart read from an
// artifact.
const DefaultMaxChartSize = 10 << 20

// HelmReleaseReconciler reconciles HelmRelease objects.
type HelmReleaseReconciler struct {
	client.Client
	// Events records events about HelmReleases.
	Events *event.Recorder
	// ChartReader reads the packaged charts of source artifacts.
	ChartReader fetch.Reader
	// Targets builds the clients of the release's target cluster and
	// identity.
	Targets *impersonation.Factory
	// JitterPercent spreads each object's interval.
	JitterPercent int
	// DependencyRequeue is how long to wait for a dependency or a chart.
	DependencyRequeue time.Duration
	// StoredAgainHere tells which sources' artifacts this process's source
	// controller is storing again under its own address (see
	// sourceref.Resolver.StoredAgainHere).
	StoredAgainHere func(kind string, source client.Object, a meta.Artifact) bool
	// NoCrossNamespaceRefs refuses references to other namespaces.
	NoCrossNamespaceRefs bool
	// MaxChartSize bounds a packaged chart; zero means DefaultMaxChartSize.
	MaxChartSize int64
	// ChartCacheMaxMemory bounds the estimated memory of the loaded
	// charts kept for the next reconciliations; zero means
	// DefaultChartCacheMaxMemory.
	ChartCacheMaxMemory int64
	// Sandbox renders charts in child processes bounded in memory, output
	// and time; when nil, SetupWithManager makes one with the default
	// limits.
	Sandbox *sandbox.Renderer
	// Versions, when set, tells the fields version that the objects
	// labelled with their HelmRelease have now: drift detection leaves out
	// the objects still at the fields version at which it last found them
	// without drift (releases on the local cluster only).
	Versions FieldsReader
	// Releases, when set, remembers the newest release of each HelmRelease
	// on the local cluster, so that a run with nothing new reads no
	// release Secret.
	Releases *helmaction.NewestCache
	// Health, when set, tells the health of the objects labelled with
	// their HelmRelease as a watch last judged them: an install's or
	// upgrade's wait reads an object that was not ready only when the
	// watch cannot tell (releases on the local cluster only).
	Health health.Watch
	// Wakes, when set, tells those waits that the watch judged an object
	// they wait for again, so that they poll at once.
	Wakes *health.Wakes

	synced  syncedVersions
	charts  loadedCharts
	runners releaseRunners
	actions actionsUnderWay
}

// helmReleaseKind is the HelmRelease kind for the runner.
func (r *HelmReleaseReconciler) helmReleaseKind() reconcile.Kind[*helmv2.HelmRelease] {
	return reconcile.Kind[*helmv2.HelmRelease]{
		Name:               helmv2.HelmReleaseKind,
		New:                func() *helmv2.HelmRelease { return &helmv2.HelmRelease{} },
		NegativeConditions: []string{},
		SuccessReason:      meta.SucceededReason,
		SuccessMessage:     successMessage,
		Revision:           func(obj *helmv2.HelmRelease) string { return obj.Status.LastAttemptedRevision },
		CheckSpec:          checkServed,
		SourceRef:          &reconcile.SourceRef[*helmv2.HelmRelease]{Use: kinds.ChartRef, Ref: chartRef},
		Run:                r.run,
		Finalize:           r.finalize,
	}
}

// runner returns the runner of HelmReleases.
func (r *HelmReleaseReconciler) runner() *reconcile.Runner[*helmv2.HelmRelease] {
	return &reconcile.Runner[*helmv2.HelmRelease]{
		Client: r.Client, Events: r.Events, JitterPercent: r.JitterPercent, NoCrossNamespaceRefs: r.NoCrossNamespaceRefs,
		Kind: r.helmReleaseKind(),
	}
}

// successMessage is the message of Ready=True: what the last action did.
func successMessage(obj *helmv2.HelmRelease) string {
	if c := conditions.Get(obj, helmv2.ReleasedCondition); c != nil && c.Status == "True" {
		return c.Message
	}
	return fmt.Sprintf("Release %s/%s is up to date", obj.GetReleaseNamespace(), obj.GetReleaseName())
}

// SetupWithManager registers the reconciler with mgr: the runner watches
// HelmReleases, their chart sources (a new artifact reconciles them at
// once), their dependencies of either kind, and their gates; a new spec or
// chart artifact also cancels the action that waits for the old one.
func (r *HelmReleaseReconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager, opts reconcile.ControllerOptions) error {
	r.charts.init(r.chartCacheMaxMemory())
	if r.Sandbox == nil {
		r.Sandbox = sandbox.New(sandbox.Limits{}, nil)
	}
	r.runners.sandbox = r.Sandbox
	runner := r.runner()
	b, err := runner.Setup(ctx, mgr, opts)
	if err != nil {
		return err
	}
	b = b.Watches(&helmv2.HelmRelease{}, r.actions.onReleaseUpdate())
	for _, src := range kinds.SourcesFor(kinds.ChartRef) {
		b = b.Watches(src.New(), r.actions.onArtifactUpdate(src.Kind))
	}
	return b.Complete(runner)
}

// run runs the steps of one HelmRelease, after the runner's checks of what
// is not served and of the gates: chart, dependencies,
// values, target, release, drift, health of custom resources.
func (r *HelmReleaseReconciler) run(ctx context.Context, obj *helmv2.HelmRelease, _ *patch.Helper) (outcome.Result, error) {
	return reconcile.RunSteps(ctx, obj, &releaseScope{},
		r.reconcileChart, r.reconcileDependencies, r.reconcileValues, r.reconcileTarget,
		r.reconcileReleaseStep, r.reconcileDrift, r.reconcileHealth)
}

// reconcileChart makes the HelmChart of spec.chart, waits for the chart's
// artifact and loads it.
func (r *HelmReleaseReconciler) reconcileChart(ctx context.Context, obj *helmv2.HelmRelease, sc *releaseScope) (outcome.Result, error) {
	if err := r.reconcileChartTemplate(ctx, obj); err != nil {
		return outcome.ResultEmpty, err
	}
	source, err := r.getChartSource(ctx, obj)
	if err != nil {
		return outcome.ResultEmpty, err
	}
	ch, err := r.loadChart(ctx, source)
	if err != nil {
		return outcome.ResultEmpty, err
	}
	sc.chart, sc.revision, sc.digest = ch, ch.Metadata.Version, source.GetArtifact().Digest
	return outcome.ResultSuccess, nil
}

// reconcileDependencies waits for the dependencies, of either kind.
func (r *HelmReleaseReconciler) reconcileDependencies(ctx context.Context, obj *helmv2.HelmRelease, _ *releaseScope) (outcome.Result, error) {
	checker := dependency.Checker[*helmv2.HelmRelease]{
		Kind:                 helmv2.HelmReleaseKind,
		Client:               r.Client,
		New:                  func() *helmv2.HelmRelease { return &helmv2.HelmRelease{} },
		DependsOn:            func(hr *helmv2.HelmRelease) []meta.DependencyReference { return hr.Spec.DependsOn },
		Others:               dependency.Kinds(kustomizev1.KustomizationKind),
		NoCrossNamespaceRefs: r.NoCrossNamespaceRefs,
		Requeue:              r.DependencyRequeue,
	}
	if err := checker.Check(ctx, obj); err != nil {
		return outcome.ResultEmpty, err
	}
	return outcome.ResultSuccess, nil
}

// reconcileReleaseStep installs, upgrades, tests and remediates the
// release, then records its history and inventory.
func (r *HelmReleaseReconciler) reconcileReleaseStep(ctx context.Context, obj *helmv2.HelmRelease, sc *releaseScope) (outcome.Result, error) {
	force := handleRequests(obj)
	err := r.reconcileRelease(ctx, obj, sc, force)
	if recErr := r.recordRelease(ctx, obj, sc); recErr != nil && err == nil {
		err = recErr
	}
	if err != nil {
		return outcome.ResultEmpty, err
	}
	return outcome.ResultSuccess, nil
}

// releaseRunners keeps one release runner per target and storage
// namespace, so that the releases of one target share their clients.
type releaseRunners struct {
	// sandbox renders the charts of every runner.
	sandbox *sandbox.Renderer

	mu      sync.Mutex
	runners map[runnerKey]*helmaction.Runner
	getters map[*impersonation.Target]*helmaction.Getter
}

type runnerKey struct {
	target           *impersonation.Target
	storageNamespace string
}

// maxRunners bounds the runners kept; past it, they are built afresh.
const maxRunners = 512

// get returns the runner of target t for the releases stored in
// storageNamespace; the runners of one target share its getter (its
// discovery and mapper).
func (rr *releaseRunners) get(t *impersonation.Target, storageNamespace string, local localCaches) (*helmaction.Runner, error) {
	rr.mu.Lock()
	defer rr.mu.Unlock()
	key := runnerKey{t, storageNamespace}
	if run, ok := rr.runners[key]; ok {
		return run, nil
	}
	if rr.runners == nil || len(rr.runners) >= maxRunners {
		rr.runners = make(map[runnerKey]*helmaction.Runner)
		rr.getters = make(map[*impersonation.Target]*helmaction.Getter)
	}
	getter, ok := rr.getters[t]
	if !ok {
		var err error
		if getter, err = helmaction.NewGetter(t.Config); err != nil {
			return nil, err
		}
		rr.getters[t] = getter
	}
	opts := []helmaction.Option{helmaction.WithHealthChecker(health.NewChecker(t.Client, t.Mapper)), helmaction.WithSandbox(rr.sandbox)}
	if local.newest != nil {
		opts = append(opts, helmaction.WithNewestCache(local.newest, t.Identity))
	}
	if local.health != nil {
		opts = append(opts, helmaction.WithHealthWatch(local.health), helmaction.WithHealthWakes(local.wakes))
	}
	run, err := helmaction.New(getter, storageNamespace, opts...)
	if err != nil {
		return nil, err
	}
	rr.runners[key] = run
	return run, nil
}
