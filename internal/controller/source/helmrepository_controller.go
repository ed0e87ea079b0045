package source

import (
	"context"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sourcev1 "github.com/windlass-dev/windlass/api/source/v1"
	"github.com/windlass-dev/windlass/internal/artifact"
	"github.com/windlass-dev/windlass/internal/event"
	"github.com/windlass-dev/windlass/internal/helm/repository"
	"github.com/windlass-dev/windlass/internal/patch"
	"github.com/windlass-dev/windlass/internal/reconcile"
	"github.com/windlass-dev/windlass/internal/reconcile/outcome"
)

// +kubebuilder:rbac:groups=source.toolkit.fluxcd.io,resources=helmrepositories,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=source.toolkit.fluxcd.io,resources=helmrepositories/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=source.toolkit.fluxcd.io,resources=helmrepositories/finalizers,verbs=get;create;update;patch;delete

// Defaults of the parsed index cache that a reconciler makes when it is
// given none.
const (
	// DefaultHelmIndexCacheSize is how many parsed indexes are kept.
	DefaultHelmIndexCacheSize = 8
	// DefaultHelmIndexCacheMaxMemory is how many bytes the parsed
	// indexes kept may hold together, as Index.MemorySize estimates them
	// (about twice the stored index file).
	DefaultHelmIndexCacheMaxMemory int64 = 128 << 20
	// DefaultHelmIndexCacheTTL is how long an unused parsed index is kept.
	DefaultHelmIndexCacheTTL = 15 * time.Minute
)

// helmRepositoryNegativeConditions are the HelmRepository conditions that
// explain a Ready=False, most important first.
var helmRepositoryNegativeConditions = []string{
	sourcev1.FetchFailedCondition,
	sourcev1.StorageOperationFailedCondition,
	sourcev1.ArtifactOutdatedCondition,
}

// helmOCIRepositoryMessage is the Ready message of an OCI HelmRepository,
// which has no artifact.
const helmOCIRepositoryMessage = "Helm repository is ready"

// HelmRepositoryReconciler reconciles HelmRepository objects: for an HTTP
// repository it fetches the index and stores it, normalised, as an
// artifact; an OCI repository only holds settings for its HelmCharts.
type HelmRepositoryReconciler struct {
	client.Client
	// Events records events about HelmRepositories.
	Events *event.Recorder
	// Storage holds the artifacts.
	Storage *artifact.Storage
	// IndexCache keeps parsed indexes by artifact digest, so that the
	// HelmCharts of a repository do not parse its index again: give the
	// HelmChartReconciler the same one. Nil makes a cache of
	// DefaultHelmIndexCacheSize entries and DefaultHelmIndexCacheMaxMemory
	// bytes.
	IndexCache *repository.IndexCache
	// JitterPercent spreads each object's interval.
	JitterPercent int
	// MaxIndexSize bounds the bytes of an index; zero means
	// repository.DefaultMaxIndexSize.
	MaxIndexSize int64
	// AllowInsecureHTTP allows http:// URLs and spec.insecure; without it
	// they stall.
	AllowInsecureHTTP bool
	// NoCrossNamespaceRefs refuses gates in other namespaces.
	NoCrossNamespaceRefs bool
}

// SetupWithManager registers the reconciler with mgr: it watches
// HelmRepositories and their gates.
func (r *HelmRepositoryReconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager, opts reconcile.ControllerOptions) error {
	if r.IndexCache == nil {
		r.IndexCache = repository.NewIndexCache(DefaultHelmIndexCacheSize, DefaultHelmIndexCacheMaxMemory, DefaultHelmIndexCacheTTL)
	}
	kind := sourceKind(r.store(), func() *sourcev1.HelmRepository { return &sourcev1.HelmRepository{} },
		helmRepositoryNegativeConditions, r.checkServed, r.run)
	kind.SuccessMessage = helmRepositoryReadyMessage
	b, runner, err := newControllerFor(ctx, mgr, gatedSource{r.Client, r.Events, r.JitterPercent, r.NoCrossNamespaceRefs}, r.store(), kind, opts)
	if err != nil {
		return err
	}
	return b.Complete(runner)
}

// helmRepositoryReadyMessage is the message of a Ready HelmRepository.
func helmRepositoryReadyMessage(obj *sourcev1.HelmRepository) string {
	if obj.GetType() == sourcev1.HelmRepositoryTypeOCI {
		return helmOCIRepositoryMessage
	}
	return storedMessage(obj)
}

// store returns the storage steps shared with the other source kinds.
func (r *HelmRepositoryReconciler) store() artifactStore {
	return artifactStore{kind: sourcev1.HelmRepositoryKind, storage: r.Storage, events: r.Events}
}

// run brings one HelmRepository's artifact up to date, unless a gate holds
// it back.
func (r *HelmRepositoryReconciler) run(ctx context.Context, obj *sourcev1.HelmRepository, _ *patch.Helper) (outcome.Result, error) {
	sc := &helmRepositoryScope{fetch: fetchClock{kind: sourcev1.HelmRepositoryKind}}
	defer sc.fetch.end()
	if obj.GetType() == sourcev1.HelmRepositoryTypeOCI {
		return reconcile.RunSteps(ctx, obj, sc, r.reconcileOCI)
	}
	return reconcile.RunSteps(ctx, obj, sc, r.reconcileStorage, r.reconcileSource, r.reconcileArtifact)
}

// helmRepositoryScope carries what the steps of one run learn.
type helmRepositoryScope struct {
	storageCheck

	// index is the index fetched, parsed.
	index *repository.Index
	// normalised is the index in its stored form.
	normalised []byte
	// revision is sha256:<hex> of normalised.
	revision string
	// upToDate is set when the stored artifact already holds the
	// revision: nothing is written.
	upToDate bool
	// fetch times the index download, for the source metrics; an OCI
	// HelmRepository fetches nothing.
	fetch fetchClock
}
