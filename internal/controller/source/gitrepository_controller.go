package source

import (
	"context"
	"fmt"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	ctrlreconcile "sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/windlass-dev/windlass/api/meta"
	sourcev1 "github.com/windlass-dev/windlass/api/source/v1"
	"github.com/windlass-dev/windlass/internal/artifact"
	"github.com/windlass-dev/windlass/internal/event"
	"github.com/windlass-dev/windlass/internal/git"
	"github.com/windlass-dev/windlass/internal/patch"
	"github.com/windlass-dev/windlass/internal/predicates"
	"github.com/windlass-dev/windlass/internal/reconcile"
	"github.com/windlass-dev/windlass/internal/reconcile/outcome"
	"github.com/windlass-dev/windlass/internal/workdir"
)

// +kubebuilder:rbac:groups=source.toolkit.fluxcd.io,resources=gitrepositories,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=source.toolkit.fluxcd.io,resources=gitrepositories/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=source.toolkit.fluxcd.io,resources=gitrepositories/finalizers,verbs=get;create;update;patch;delete
// +kubebuilder:rbac:groups=gating.toolkit.fluxcd.io,resources=gates,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch
// +kubebuilder:rbac:groups="events.k8s.io",resources=events,verbs=create;patch

// gitRepositoryNegativeConditions are the GitRepository conditions that
// explain a Ready=False, most important first. Blocked is not one: a
// source behind a closed gate still serves its last artifact, Ready.
var gitRepositoryNegativeConditions = []string{
	sourcev1.FetchFailedCondition,
	sourcev1.IncludeUnavailableCondition,
	sourcev1.StorageOperationFailedCondition,
	sourcev1.ArtifactOutdatedCondition,
}

// includeIndexKey indexes GitRepositories by the names of the
// GitRepositories they include.
const includeIndexKey = ".spec.include.repository.name"

// GitRepositoryReconciler reconciles GitRepository objects: it clones the
// repository at the declared reference, verifies it, and stores it as an
// artifact.
type GitRepositoryReconciler struct {
	client.Client
	// Events records events about GitRepositories.
	Events *event.Recorder
	// Storage holds the artifacts.
	Storage *artifact.Storage
	// JitterPercent spreads each object's interval.
	JitterPercent int
	// DependencyRequeue is how long to wait for an included repository that
	// has no artifact yet.
	DependencyRequeue time.Duration
	// MaxCloneSize, when positive, bounds each clone's bytes received, its
	// objects' uncompressed size and the bytes it checks out; zero leaves
	// the git package's defaults (see git.CheckoutOptions).
	MaxCloneSize int64
	// AllowInsecureHTTP allows http:// URLs; without it they stall.
	AllowInsecureHTTP bool
	// NoCrossNamespaceRefs refuses gates in other namespaces.
	NoCrossNamespaceRefs bool
}

// SetupWithManager registers the reconciler with mgr: it watches
// GitRepositories, those they include (a new artifact rebuilds the
// includers at once, and so does one stored again here that they waited
// for: opts.ArtifactsStoredAgain) and their gates (a gate that opens or
// closes reconciles the GitRepositories behind it at once).
func (r *GitRepositoryReconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager, opts reconcile.ControllerOptions) error {
	err := mgr.GetFieldIndexer().IndexField(ctx, &sourcev1.GitRepository{}, includeIndexKey, func(o client.Object) []string {
		repo := o.(*sourcev1.GitRepository)
		names := make([]string, 0, len(repo.Spec.Include))
		for _, inc := range repo.Spec.Include {
			names = append(names, inc.GitRepositoryRef.Name)
		}
		return names
	})
	if err != nil {
		return fmt.Errorf("indexing GitRepository includes: %w", err)
	}
	kind := sourceKind(r.store(), func() *sourcev1.GitRepository { return &sourcev1.GitRepository{} }, gitRepositoryNegativeConditions, r.checkServed, r.run)
	kind.Held = r.held
	b, runner, err := newControllerFor(ctx, mgr, gatedSource{r.Client, r.Events, r.JitterPercent, r.NoCrossNamespaceRefs}, r.store(), kind, opts)
	if err != nil {
		return err
	}
	includers := handler.EnqueueRequestsFromMapFunc(r.includersOf)
	b = b.Watches(&sourcev1.GitRepository{}, includers, builder.WithPredicates(predicates.ArtifactChanged{}))
	if opts.ArtifactsStoredAgain != nil {
		b = b.WatchesRawSource(source.Channel(opts.ArtifactsStoredAgain(sourcev1.GitRepositoryKind), includers))
	}
	return b.Complete(runner)
}

// includersOf maps a GitRepository to the GitRepositories that include it.
func (r *GitRepositoryReconciler) includersOf(ctx context.Context, o client.Object) []ctrlreconcile.Request {
	var list sourcev1.GitRepositoryList
	if err := r.List(ctx, &list, client.InNamespace(o.GetNamespace()),
		client.MatchingFields{includeIndexKey: o.GetName()}); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Listing GitRepositories that include", "GitRepository", client.ObjectKeyFromObject(o))
		return nil
	}
	reqs := make([]ctrlreconcile.Request, 0, len(list.Items))
	for i := range list.Items {
		reqs = append(reqs, ctrlreconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
	}
	return reqs
}

// run brings one GitRepository's artifact up to date, unless a gate holds
// it back. An artifact that another replica stored, whose commit the
// remote still points at, is stored here only once a reader asks for it
// (see storageCheck).
func (r *GitRepositoryReconciler) run(ctx context.Context, obj *sourcev1.GitRepository, patcher *patch.Helper) (outcome.Result, error) {
	sc := &gitScope{fetch: fetchClock{kind: sourcev1.GitRepositoryKind}, announce: func(ctx context.Context) error {
		return reconcile.AnnounceNewGeneration(ctx, obj, patcher)
	}}
	sc.deferrable = true
	defer sc.cleanup()
	defer sc.fetch.end()
	return reconcile.RunSteps(ctx, obj, sc, r.reconcileStorage, r.reconcileSource, r.reconcileInclude, r.reconcileArtifact)
}

// store returns the storage steps shared with the other source kinds.
func (r *GitRepositoryReconciler) store() artifactStore {
	return artifactStore{kind: sourcev1.GitRepositoryKind, storage: r.Storage, events: r.Events}
}

// gitScope carries what the steps of one run learn.
type gitScope struct {
	storageCheck

	// workDir holds the checkout; removed when the run ends.
	workDir string
	// client cloned the repository; it holds the files of a checkout left
	// in memory (see git.CheckoutOptions.InMemory) until the run ends.
	client *git.Client
	// commit is what the checkout resolved to.
	commit *git.Commit
	// includes are the artifacts of the included repositories, in spec
	// order.
	includes []*meta.Artifact
	// upToDate is set when the stored artifact already reflects the upstream
	// revision and the spec, so that nothing needs building.
	upToDate bool
	// heldRevision, when set, is the revision of the artifact that a
	// closed gate holds and that is rebuilt (see rebuildHeldArtifact): the
	// reference is pinned to its commit, and the artifact keeps it as its
	// revision.
	heldRevision string
	// announce patches the status of a new generation, for a clone that
	// takes long (see reconcile.AnnounceIfSlow).
	announce func(context.Context) error
	// fetch times the clone, for the source metrics.
	fetch fetchClock
}

// cleanup releases the clone and removes the work directory.
func (sc *gitScope) cleanup() {
	if sc.client != nil {
		sc.client.Close()
	}
	workdir.RemoveLater(sc.workDir)
}
