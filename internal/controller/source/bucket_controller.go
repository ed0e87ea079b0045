package source

import (
	"context"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sourcev1 "github.com/windlass-dev/windlass/api/source/v1"
	"github.com/windlass-dev/windlass/internal/artifact"
	"github.com/windlass-dev/windlass/internal/bucket"
	"github.com/windlass-dev/windlass/internal/event"
	"github.com/windlass-dev/windlass/internal/patch"
	"github.com/windlass-dev/windlass/internal/reconcile"
	"github.com/windlass-dev/windlass/internal/reconcile/outcome"
	"github.com/windlass-dev/windlass/internal/workdir"
)

// +kubebuilder:rbac:groups=source.toolkit.fluxcd.io,resources=buckets,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=source.toolkit.fluxcd.io,resources=buckets/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=source.toolkit.fluxcd.io,resources=buckets/finalizers,verbs=get;create;update;patch;delete

// bucketNegativeConditions are the Bucket conditions that explain a
// Ready=False, most important first.
var bucketNegativeConditions = []string{
	sourcev1.FetchFailedCondition,
	sourcev1.StorageOperationFailedCondition,
	sourcev1.ArtifactOutdatedCondition,
}

// BucketReconciler reconciles Bucket objects: it lists the bucket, and
// when the listing changed, downloads the objects and stores them as an
// artifact.
type BucketReconciler struct {
	client.Client
	// Events records events about Buckets.
	Events *event.Recorder
	// Storage holds the artifacts.
	Storage *artifact.Storage
	// JitterPercent spreads each object's interval.
	JitterPercent int
	// MaxSize bounds the bytes downloaded from a bucket, per object and in
	// all; zero means archive.DefaultMaxSize.
	MaxSize int64
	// DownloadConcurrency bounds the objects of one bucket downloaded at
	// once; zero means 8.
	DownloadConcurrency int
	// AllowInsecureHTTP allows spec.insecure (plain HTTP) and plain-HTTP
	// proxies; without it they stall.
	AllowInsecureHTTP bool
	// NoCrossNamespaceRefs refuses gates in other namespaces.
	NoCrossNamespaceRefs bool
}

// SetupWithManager registers the reconciler with mgr: it watches Buckets
// and their gates.
func (r *BucketReconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager, opts reconcile.ControllerOptions) error {
	kind := sourceKind(r.store(), func() *sourcev1.Bucket { return &sourcev1.Bucket{} }, bucketNegativeConditions, r.checkServed, r.run)
	b, runner, err := newControllerFor(ctx, mgr, gatedSource{r.Client, r.Events, r.JitterPercent, r.NoCrossNamespaceRefs}, r.store(), kind, opts)
	if err != nil {
		return err
	}
	return b.Complete(runner)
}

// store returns the storage steps shared with the other source kinds.
func (r *BucketReconciler) store() artifactStore {
	return artifactStore{kind: sourcev1.BucketKind, storage: r.Storage, events: r.Events}
}

// run brings one Bucket's artifact up to date, unless a gate holds it
// back. An artifact that another replica stored, whose objects the bucket
// still lists unchanged, is stored here only once a reader asks for it
// (see storageCheck).
func (r *BucketReconciler) run(ctx context.Context, obj *sourcev1.Bucket, _ *patch.Helper) (outcome.Result, error) {
	sc := &bucketScope{deadline: time.Now().Add(obj.GetTimeout()), fetch: fetchClock{kind: sourcev1.BucketKind}}
	sc.deferrable = true
	defer sc.cleanup()
	defer sc.fetch.end()
	return reconcile.RunSteps(ctx, obj, sc, r.reconcileStorage, r.reconcileSource, r.reconcileArtifact)
}

// bucketScope carries what the steps of one run learn.
type bucketScope struct {
	storageCheck

	// deadline ends the object storage operations of the run
	// (spec.timeout).
	deadline time.Time
	// client reaches the bucket.
	client *bucket.Client
	// objects are the objects listed, less those the ignore rules exclude.
	objects []bucket.Object
	// revision is sha256:<hex> of the listing.
	revision string
	// upToDate is set when the stored artifact already holds the revision
	// with the spec's ignore rules: nothing is downloaded.
	upToDate bool
	// workDir holds the downloaded objects; removed when the run ends.
	workDir string
	// fetch times the listing and the download, for the source metrics.
	fetch fetchClock
}

func (sc *bucketScope) cleanup() {
	workdir.RemoveLater(sc.workDir)
}
