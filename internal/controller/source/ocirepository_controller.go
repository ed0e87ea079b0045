package source

import (
	"context"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sourcev1 "github.com/windlass-dev/windlass/api/source/v1"
	"github.com/windlass-dev/windlass/internal/artifact"
	"github.com/windlass-dev/windlass/internal/event"
	"github.com/windlass-dev/windlass/internal/oci"
	"github.com/windlass-dev/windlass/internal/patch"
	"github.com/windlass-dev/windlass/internal/reconcile"
	"github.com/windlass-dev/windlass/internal/reconcile/outcome"
	"github.com/windlass-dev/windlass/internal/workdir"
)

// +kubebuilder:rbac:groups=source.toolkit.fluxcd.io,resources=ocirepositories,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=source.toolkit.fluxcd.io,resources=ocirepositories/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=source.toolkit.fluxcd.io,resources=ocirepositories/finalizers,verbs=get;create;update;patch;delete
// +kubebuilder:rbac:groups="",resources=serviceaccounts,verbs=get;list;watch

// ociRepositoryNegativeConditions are the OCIRepository conditions that
// explain a Ready=False, most important first.
var ociRepositoryNegativeConditions = []string{
	sourcev1.FetchFailedCondition,
	sourcev1.StorageOperationFailedCondition,
	sourcev1.ArtifactOutdatedCondition,
}

// OCIRepositoryReconciler reconciles OCIRepository objects: it resolves the
// declared reference to a digest, verifies the artifact's signature when
// asked, and stores the selected layer as an artifact.
type OCIRepositoryReconciler struct {
	client.Client
	// Events records events about OCIRepositories.
	Events *event.Recorder
	// Storage holds the artifacts.
	Storage *artifact.Storage
	// JitterPercent spreads each object's interval.
	JitterPercent int
	// MaxLayerSize bounds the bytes of a layer downloaded and, extracted,
	// of its files; zero means archive.DefaultMaxSize.
	MaxLayerSize int64
	// AllowInsecureHTTP allows spec.insecure (plain HTTP) and plain-HTTP
	// proxies; without it they stall.
	AllowInsecureHTTP bool
	// NoCrossNamespaceRefs refuses gates in other namespaces.
	NoCrossNamespaceRefs bool
}

// SetupWithManager registers the reconciler with mgr: it watches
// OCIRepositories and their gates.
func (r *OCIRepositoryReconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager, opts reconcile.ControllerOptions) error {
	kind := sourceKind(r.store(), func() *sourcev1.OCIRepository { return &sourcev1.OCIRepository{} }, ociRepositoryNegativeConditions, r.checkServed, r.run)
	b, runner, err := newControllerFor(ctx, mgr, gatedSource{r.Client, r.Events, r.JitterPercent, r.NoCrossNamespaceRefs}, r.store(), kind, opts)
	if err != nil {
		return err
	}
	return b.Complete(runner)
}

// store returns the storage steps shared with the other source kinds.
func (r *OCIRepositoryReconciler) store() artifactStore {
	return artifactStore{kind: sourcev1.OCIRepositoryKind, storage: r.Storage, events: r.Events}
}

// run brings one OCIRepository's artifact up to date, unless a gate holds
// it back. An artifact that another replica stored, whose digest the tag
// still resolves to, is stored here only once a reader asks for it (see
// storageCheck).
func (r *OCIRepositoryReconciler) run(ctx context.Context, obj *sourcev1.OCIRepository, _ *patch.Helper) (outcome.Result, error) {
	sc := &ociScope{deadline: time.Now().Add(obj.GetTimeout()), fetch: fetchClock{kind: sourcev1.OCIRepositoryKind}}
	sc.deferrable = true
	defer sc.cleanup()
	defer sc.fetch.end()
	return reconcile.RunSteps(ctx, obj, sc, r.reconcileStorage, r.reconcileSource, r.reconcileArtifact)
}

// ociScope carries what the steps of one run learn.
type ociScope struct {
	storageCheck

	// deadline ends the registry operations of the run (spec.timeout).
	deadline time.Time
	// remote says how to reach the registry.
	remote oci.Options
	// repo is the repository of spec.url.
	repo name.Repository
	// digest is what the reference resolved to.
	digest name.Digest
	// revision is the artifact's revision: <tag>@sha256:<hex> or
	// sha256:<hex>.
	revision string
	// upToDate is set when the stored artifact already holds the revision
	// with the spec's content settings: nothing is downloaded.
	upToDate bool
	// workDir holds the extracted layer; removed when the run ends.
	workDir string
	// fetch times the resolve and the download, for the source metrics.
	fetch fetchClock
}

func (sc *ociScope) cleanup() {
	workdir.RemoveLater(sc.workDir)
}
