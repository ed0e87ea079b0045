package helm

import (
	"context"
	"fmt"
	"sync"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	ctrlreconcile "sigs.k8s.io/controller-runtime/pkg/reconcile"

	gatingv1alpha1 "github.com/windlass-dev/windlass/api/gating/v1alpha1"
	helmv2 "github.com/windlass-dev/windlass/api/helm/v2"
	kustomizev1 "github.com/windlass-dev/windlass/api/kustomize/v1"
	"github.com/windlass-dev/windlass/api/meta"
	"github.com/windlass-dev/windlass/internal/conditions"
	"github.com/windlass-dev/windlass/internal/dependency"
	"github.com/windlass-dev/windlass/internal/event"
	"github.com/windlass-dev/windlass/internal/fetch"
	"github.com/windlass-dev/windlass/internal/gate"
	"github.com/windlass-dev/windlass/internal/health"
	helmaction "github.com/windlass-dev/windlass/internal/helm/release"
	"github.com/windlass-dev/windlass/internal/impersonation"
	"github.com/windlass-dev/windlass/internal/patch"
	"github.com/windlass-dev/windlass/internal/predicates"
	"github.com/windlass-dev/windlass/internal/reconcile"
)

// +kubebuilder:rbac:groups=helm.toolkit.fluxcd.io,resources=helmreleases,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=helm.toolkit.fluxcd.io,resources=helmreleases/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=helm.toolkit.fluxcd.io,resources=helmreleases/finalizers,verbs=get;create;update;patch;delete
// +kubebuilder:rbac:groups=source.toolkit.fluxcd.io,resources=helmcharts,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=source.toolkit.fluxcd.io,resources=ocirepositories,verbs=get;list;watch
// +kubebuilder:rbac:groups=kustomize.toolkit.fluxcd.io,resources=kustomizations,verbs=get;list;watch
// +kubebuilder:rbac:groups=gating.toolkit.fluxcd.io,resources=gates,verbs=get;list;watch
// +kubebuilder:rbac:groups="*",resources="*",verbs="*"

// Index keys of HelmReleases.
const (
	chartIndexKey      = ".spec.chartSource"
	dependencyIndexKey = ".spec.dependsOn"
)

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
	// NoCrossNamespaceRefs refuses references to other namespaces.
	NoCrossNamespaceRefs bool
	// MaxChartSize bounds a packaged chart; zero means DefaultMaxChartSize.
	MaxChartSize int64

	charts  loadedCharts
	runners releaseRunners
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
		Run:                r.run,
		Finalize:           r.finalize,
	}
}

// successMessage is the message of Ready=True: what the last action did.
func successMessage(obj *helmv2.HelmRelease) string {
	if c := conditions.Get(obj, helmv2.ReleasedCondition); c != nil && c.Status == "True" {
		return c.Message
	}
	return fmt.Sprintf("Release %s/%s is up to date", obj.GetReleaseNamespace(), obj.GetReleaseName())
}

// SetupWithManager registers the reconciler with mgr: it watches
// HelmReleases, their chart sources (a new artifact reconciles them at
// once), their dependencies of either kind, and their gates.
func (r *HelmReleaseReconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager, opts reconcile.ControllerOptions) error {
	r.charts.max = 64
	indexer := mgr.GetFieldIndexer()
	if err := indexer.IndexField(ctx, &helmv2.HelmRelease{}, chartIndexKey, func(o client.Object) []string {
		return []string{chartKey(o.(*helmv2.HelmRelease))}
	}); err != nil {
		return err
	}
	if err := indexer.IndexField(ctx, &helmv2.HelmRelease{}, dependencyIndexKey, func(o client.Object) []string {
		hr := o.(*helmv2.HelmRelease)
		keys := make([]string, 0, len(hr.Spec.DependsOn))
		for _, d := range hr.Spec.DependsOn {
			keys = append(keys, dependency.IndexKey(helmv2.HelmReleaseKind, hr, d))
		}
		return keys
	}); err != nil {
		return err
	}
	if err := indexer.IndexField(ctx, &helmv2.HelmRelease{}, gate.IndexKey, gate.IndexValues); err != nil {
		return err
	}
	runner := &reconcile.Runner[*helmv2.HelmRelease]{Client: r.Client, Events: r.Events, JitterPercent: r.JitterPercent, Kind: r.helmReleaseKind()}
	b := reconcile.NewControllerManagedBy(mgr, &helmv2.HelmRelease{}, opts).
		Watches(&helmv2.HelmRelease{}, handler.EnqueueRequestsFromMapFunc(r.dependents(helmv2.HelmReleaseKind)),
			builder.WithPredicates(predicates.BecameReady{})).
		Watches(&kustomizev1.Kustomization{}, handler.EnqueueRequestsFromMapFunc(r.dependents(kustomizev1.KustomizationKind)),
			builder.WithPredicates(predicates.BecameReady{})).
		Watches(&gatingv1alpha1.Gate{}, gate.EnqueueConsumers(r.Client, func() client.ObjectList { return &helmv2.HelmReleaseList{} }),
			builder.WithPredicates(gate.OpenedChanged()))
	for kind, newSource := range chartSources() {
		b = b.Watches(newSource(), handler.EnqueueRequestsFromMapFunc(r.chartUsers(kind)),
			builder.WithPredicates(predicates.ArtifactChanged{}))
	}
	return b.Complete(runner)
}

// dependents returns the handler of a dependency of kind that became
// ready: it reconciles the HelmReleases that depend on it.
func (r *HelmReleaseReconciler) dependents(kind string) handler.MapFunc {
	return func(ctx context.Context, o client.Object) []ctrlreconcile.Request {
		return r.requestsFor(ctx, client.MatchingFields{dependencyIndexKey: dependency.IndexKeyOf(kind, o)})
	}
}

// chartUsers returns the handler of a chart source of kind whose artifact
// changed: it reconciles the HelmReleases that use it.
func (r *HelmReleaseReconciler) chartUsers(kind string) handler.MapFunc {
	return func(ctx context.Context, o client.Object) []ctrlreconcile.Request {
		return r.requestsFor(ctx, client.MatchingFields{chartIndexKey: kind + "/" + o.GetNamespace() + "/" + o.GetName()})
	}
}

func (r *HelmReleaseReconciler) requestsFor(ctx context.Context, match client.MatchingFields) []ctrlreconcile.Request {
	var list helmv2.HelmReleaseList
	if err := r.List(ctx, &list, match); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Listing HelmReleases to wake")
		return nil
	}
	reqs := make([]ctrlreconcile.Request, 0, len(list.Items))
	for i := range list.Items {
		reqs = append(reqs, ctrlreconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
	}
	return reqs
}

// run runs the steps of one HelmRelease: what is not served, gates, chart, dependencies,
// values, target, release, drift, health of custom resources.
func (r *HelmReleaseReconciler) run(ctx context.Context, obj *helmv2.HelmRelease, _ *patch.Helper) (reconcile.Result, error) {
	return reconcile.RunSteps(ctx, obj, &releaseScope{},
		checkServed, r.reconcileGates, r.reconcileChart, r.reconcileDependencies, r.reconcileValues, r.reconcileTarget,
		r.reconcileReleaseStep, r.reconcileDrift, r.reconcileHealth)
}

// reconcileGates holds the run while a gate of spec.gates is closed or
// missing: nothing is installed, upgraded or corrected.
func (r *HelmReleaseReconciler) reconcileGates(ctx context.Context, obj *helmv2.HelmRelease, _ *releaseScope) (reconcile.Result, error) {
	if err := gate.Enforce(ctx, r.Client, r.Events, obj, gate.Applier, r.NoCrossNamespaceRefs, obj.GetRequeueAfter()); err != nil {
		return reconcile.ResultEmpty, err
	}
	return reconcile.ResultSuccess, nil
}

// reconcileChart makes the HelmChart of spec.chart, waits for the chart's
// artifact and loads it.
func (r *HelmReleaseReconciler) reconcileChart(ctx context.Context, obj *helmv2.HelmRelease, sc *releaseScope) (reconcile.Result, error) {
	if err := r.reconcileChartTemplate(ctx, obj); err != nil {
		return reconcile.ResultEmpty, err
	}
	source, err := r.getChartSource(ctx, obj)
	if err != nil {
		return reconcile.ResultEmpty, err
	}
	ch, err := r.loadChart(ctx, source)
	if err != nil {
		return reconcile.ResultEmpty, err
	}
	sc.chart, sc.revision, sc.digest = ch, ch.Metadata.Version, source.GetArtifact().Digest
	return reconcile.ResultSuccess, nil
}

// reconcileDependencies waits for the dependencies, of either kind.
func (r *HelmReleaseReconciler) reconcileDependencies(ctx context.Context, obj *helmv2.HelmRelease, _ *releaseScope) (reconcile.Result, error) {
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
		return reconcile.ResultEmpty, err
	}
	return reconcile.ResultSuccess, nil
}

// reconcileReleaseStep installs, upgrades, tests and remediates the
// release, then records its history and inventory.
func (r *HelmReleaseReconciler) reconcileReleaseStep(ctx context.Context, obj *helmv2.HelmRelease, sc *releaseScope) (reconcile.Result, error) {
	force := handleRequests(obj)
	err := r.reconcileRelease(ctx, obj, sc, force)
	if recErr := r.recordRelease(ctx, obj, sc); recErr != nil && err == nil {
		err = recErr
	}
	if err != nil {
		return reconcile.ResultEmpty, err
	}
	return reconcile.ResultSuccess, nil
}

// releaseRunners keeps one release runner per target and storage
// namespace, so that the releases of one target share their clients.
type releaseRunners struct {
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
func (rr *releaseRunners) get(t *impersonation.Target, storageNamespace string) (*helmaction.Runner, error) {
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
	run, err := helmaction.New(getter, storageNamespace, helmaction.WithHealthChecker(health.NewChecker(t.Client, t.Mapper)))
	if err != nil {
		return nil, err
	}
	rr.runners[key] = run
	return run, nil
}
