package source

import (
	"context"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	sourcev1 "github.com/windlass-dev/windlass/api/source/v1"
	"github.com/windlass-dev/windlass/internal/artifact"
	"github.com/windlass-dev/windlass/internal/event"
	"github.com/windlass-dev/windlass/internal/fetch"
	"github.com/windlass-dev/windlass/internal/helm/chart"
	"github.com/windlass-dev/windlass/internal/helm/repository"
	"github.com/windlass-dev/windlass/internal/kinds"
	"github.com/windlass-dev/windlass/internal/patch"
	"github.com/windlass-dev/windlass/internal/predicates"
	"github.com/windlass-dev/windlass/internal/reconcile"
	"github.com/windlass-dev/windlass/internal/reconcile/outcome"
	"github.com/windlass-dev/windlass/internal/reconcile/sourceref"
)

// +kubebuilder:rbac:groups=source.toolkit.fluxcd.io,resources=helmcharts,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=source.toolkit.fluxcd.io,resources=helmcharts/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=source.toolkit.fluxcd.io,resources=helmcharts/finalizers,verbs=get;create;update;patch;delete

// helmChartNegativeConditions are the HelmChart conditions that explain a
// Ready=False, most important first.
var helmChartNegativeConditions = []string{
	sourcev1.FetchFailedCondition,
	sourcev1.BuildFailedCondition,
	sourcev1.StorageOperationFailedCondition,
	sourcev1.ArtifactOutdatedCondition,
}

// defaultSourceRequeue is how long a HelmChart or an ArtifactGenerator
// waits for a source without an artifact when the reconciler does not say;
// the watch on the sources usually comes first.
const defaultSourceRequeue = 30 * time.Second

// HelmChartReconciler reconciles HelmChart objects: it pulls a chart from
// a HelmRepository (an HTTP index or an OCI registry), or loads and
// packages one from a folder of a GitRepository's or Bucket's artifact,
// and stores the package as an artifact.
type HelmChartReconciler struct {
	client.Client
	// Events records events about HelmCharts.
	Events *event.Recorder
	// Storage holds the artifacts, the HelmCharts' and their sources'.
	Storage *artifact.Storage
	// Remote, when set, downloads from their URL the artifacts of sources
	// that Storage does not hold: the replicas share the sources
	// (--shards=auto), and another may hold a chart's source.
	Remote *fetch.HTTP
	// IndexCache keeps parsed indexes by artifact digest: the same as the
	// HelmRepositoryReconciler's, so that a repository's index is parsed
	// once for all its charts. Nil makes a cache of
	// DefaultHelmIndexCacheSize entries and DefaultHelmIndexCacheMaxMemory
	// bytes.
	IndexCache *repository.IndexCache
	// JitterPercent spreads each object's interval.
	JitterPercent int
	// DependencyRequeue is how long to wait for a source that has no
	// artifact yet; zero means 30s.
	DependencyRequeue time.Duration
	// ChartLimits bound a chart: its package (downloaded or built), the
	// size and number of its files; zero fields mean the chart package's
	// defaults.
	ChartLimits chart.Limits
	// MaxIndexSize bounds the bytes of an index read from storage or
	// fetched for a dependency; zero means repository.DefaultMaxIndexSize.
	MaxIndexSize int64
	// AllowInsecureHTTP allows plain-HTTP chart repositories and
	// registries for dependencies and OCI charts; without it they fail.
	AllowInsecureHTTP bool
	// AllowLoopback lets the dependencies from repositories that no
	// HelmRepository declares come from the controller's own host
	// (--allow-loopback-addresses); they never come from link-local or
	// private addresses.
	AllowLoopback bool
	// NoCrossNamespaceRefs refuses gates in other namespaces.
	NoCrossNamespaceRefs bool

	// trees holds extracted source artifacts, shared by the HelmCharts of
	// one revision.
	trees fetch.TreeCache
}

// SetupWithManager registers the reconciler with mgr: it watches
// HelmCharts, their gates and their sources (a new artifact of a source,
// or an OCI HelmRepository becoming ready, reconciles the HelmCharts that
// use it at once).
func (r *HelmChartReconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager, opts reconcile.ControllerOptions) error {
	if r.IndexCache == nil {
		r.IndexCache = repository.NewIndexCache(DefaultHelmIndexCacheSize, DefaultHelmIndexCacheMaxMemory, DefaultHelmIndexCacheTTL)
	}
	// Extracted artifacts are removed when the manager stops.
	if err := mgr.Add(reconcile.OnStop(r.trees.RemoveAll)); err != nil {
		return err
	}
	kind := sourceKind(r.store(), func() *sourcev1.HelmChart { return &sourcev1.HelmChart{} }, helmChartNegativeConditions, r.checkServed, r.run)
	kind.SourceRef = &reconcile.SourceRef[*sourcev1.HelmChart]{
		Use: kinds.HelmChartSource,
		Ref: func(obj *sourcev1.HelmChart) sourceref.Ref {
			return sourceref.Ref{Kind: obj.Spec.SourceRef.Kind, Name: obj.Spec.SourceRef.Name}
		},
		Wakes: sourceChanged,
	}
	b, runner, err := newControllerFor(ctx, mgr, gatedSource{r.Client, r.Events, r.JitterPercent, r.NoCrossNamespaceRefs}, r.store(), kind, opts)
	if err != nil {
		return err
	}
	return b.Complete(runner)
}

// sourceChanged is when a HelmChart's source of kind asks for a new
// chart: a new artifact, or a HelmRepository that became Ready (its index
// can be read again).
func sourceChanged(kind string) predicate.Predicate {
	if kind == sourcev1.HelmRepositoryKind {
		return predicate.Or[client.Object](predicates.ArtifactChanged{}, predicates.ArtifactMoved{}, predicates.BecameReady{})
	}
	return predicate.Or[client.Object](predicates.ArtifactChanged{}, predicates.ArtifactMoved{})
}

// store returns the storage steps shared with the other source kinds.
func (r *HelmChartReconciler) store() artifactStore {
	return artifactStore{kind: sourcev1.HelmChartKind, storage: r.Storage, events: r.Events}
}

// run brings one HelmChart's artifact up to date, unless a gate holds it
// back.
func (r *HelmChartReconciler) run(ctx context.Context, obj *sourcev1.HelmChart, _ *patch.Helper) (outcome.Result, error) {
	sc := &helmChartScope{fetch: fetchClock{kind: sourcev1.HelmChartKind}}
	defer sc.cleanup()
	defer sc.fetch.end()
	return reconcile.RunSteps(ctx, obj, sc, r.reconcileStorage, r.reconcileSource, r.reconcileBuild, r.reconcileArtifact)
}

// helmChartScope carries what the steps of one run learn.
type helmChartScope struct {
	storageCheck

	// sourceRevision is what the chart comes from: the revision of the
	// index or of the source artifact, or <version>@<digest> of an OCI
	// chart.
	sourceRevision string
	// name and version are the chart's; version is the artifact's
	// revision.
	name, version string
	// downloaded is the chart package pulled from a repository.
	downloaded []byte
	// root is the extracted source artifact that holds the chart folder;
	// release ends its use.
	root    string
	release func()
	// pkg is the package to store; packaged says it was built here rather
	// than stored as it was pulled.
	pkg      []byte
	packaged bool
	// upToDate is set when the stored artifact already holds what the
	// spec and the source give: nothing is built or written.
	upToDate bool
	// fetch times the chart's pull from a HelmRepository, or its build
	// from a GitRepository's or Bucket's tree, for the source metrics.
	fetch fetchClock
}

func (sc *helmChartScope) cleanup() {
	if sc.release != nil {
		sc.release()
	}
}

// sourceRequeue returns how long to wait for a source without an artifact.
func (r *HelmChartReconciler) sourceRequeue() time.Duration {
	return sourceRequeue(r.DependencyRequeue)
}

// maxChartSize returns the bound on a chart package's bytes.
func (r *HelmChartReconciler) maxChartSize() int64 {
	if r.ChartLimits.MaxChartSize > 0 {
		return r.ChartLimits.MaxChartSize
	}
	return chart.DefaultMaxChartSize
}
