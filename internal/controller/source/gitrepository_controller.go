package source

import (
	"context"
	"fmt"
	"os"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	ctrlreconcile "sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/windlass-dev/windlass/api/meta"
	sourcev1 "github.com/windlass-dev/windlass/api/source/v1"
	"github.com/windlass-dev/windlass/internal/artifact"
	"github.com/windlass-dev/windlass/internal/conditions"
	"github.com/windlass-dev/windlass/internal/git"
	"github.com/windlass-dev/windlass/internal/metrics"
	"github.com/windlass-dev/windlass/internal/patch"
	"github.com/windlass-dev/windlass/internal/predicates"
	"github.com/windlass-dev/windlass/internal/reconcile"
	"github.com/windlass-dev/windlass/internal/redact"
)

// +kubebuilder:rbac:groups=source.toolkit.fluxcd.io,resources=gitrepositories,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=source.toolkit.fluxcd.io,resources=gitrepositories/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=source.toolkit.fluxcd.io,resources=gitrepositories/finalizers,verbs=get;create;update;patch;delete
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch
// +kubebuilder:rbac:groups="events.k8s.io",resources=events,verbs=create;patch

// gitRepositoryNegativeConditions are the GitRepository conditions that
// explain a Ready=False, most important first.
var gitRepositoryNegativeConditions = []string{
	meta.StalledCondition,
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
	// EventRecorder records Kubernetes events about GitRepositories.
	EventRecorder events.EventRecorder
	// Storage holds the artifacts.
	Storage *artifact.Storage
	// JitterPercent spreads each object's interval.
	JitterPercent int
	// DependencyRequeue is how long to wait for an included repository that
	// has no artifact yet.
	DependencyRequeue time.Duration
}

// GitRepositoryOptions tune the controller.
type GitRepositoryOptions struct {
	// MaxConcurrentReconciles is how many objects are reconciled at once.
	MaxConcurrentReconciles int
	// RateLimiter spaces the retries of failed reconciliations.
	RateLimiter workqueue.TypedRateLimiter[ctrlreconcile.Request]
}

// SetupWithManager registers the reconciler with mgr.
func (r *GitRepositoryReconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager, opts GitRepositoryOptions) error {
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
	return ctrl.NewControllerManagedBy(mgr).
		For(&sourcev1.GitRepository{}, builder.WithPredicates(
			predicate.Or(predicate.GenerationChangedPredicate{}, predicates.ReconcileRequested{}),
		)).
		Watches(&sourcev1.GitRepository{},
			handler.EnqueueRequestsFromMapFunc(r.includersOf),
			builder.WithPredicates(predicates.ArtifactChanged{}),
		).
		WithOptions(controller.Options{
			MaxConcurrentReconciles: opts.MaxConcurrentReconciles,
			RateLimiter:             opts.RateLimiter,
		}).
		Complete(r)
}

// includersOf maps a GitRepository to the GitRepositories that include it.
func (r *GitRepositoryReconciler) includersOf(ctx context.Context, o client.Object) []ctrlreconcile.Request {
	var list sourcev1.GitRepositoryList
	if err := r.List(ctx, &list, client.InNamespace(o.GetNamespace()),
		client.MatchingFields{includeIndexKey: o.GetName()}); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "listing GitRepositories that include", "GitRepository", client.ObjectKeyFromObject(o))
		return nil
	}
	reqs := make([]ctrlreconcile.Request, 0, len(list.Items))
	for i := range list.Items {
		reqs = append(reqs, ctrlreconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
	}
	return reqs
}

// Reconcile brings one GitRepository's artifact up to date.
func (r *GitRepositoryReconciler) Reconcile(ctx context.Context, req ctrl.Request) (result ctrl.Result, retErr error) {
	start := time.Now()
	obj := &sourcev1.GitRepository{}
	if err := r.Get(ctx, req.NamespacedName, obj); err != nil {
		if apierrors.IsNotFound(err) {
			r.Storage.ForgetTrees(sourcev1.GitRepositoryKind, req.Namespace, req.Name)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	defer metrics.RecordDuration(sourcev1.GitRepositoryKind, obj, start)

	if !obj.DeletionTimestamp.IsZero() {
		return r.reconcileDelete(ctx, obj)
	}
	patcher := patch.NewHelper(obj, r.Client)
	if proceed, err := reconcile.Prepare(ctx, sourcev1.GitRepositoryKind, obj, obj.Spec.Suspend, patcher); !proceed {
		return ctrl.Result{}, err
	}

	var res reconcile.Result
	defer func() {
		result, retErr = r.summarizeAndPatch(ctx, obj, patcher, res, retErr)
	}()

	sc := &gitScope{announce: func(ctx context.Context) error {
		return reconcile.AnnounceNewGeneration(ctx, obj, patcher)
	}}
	defer sc.cleanup()
	res, retErr = r.runSteps(ctx, obj, sc)
	return ctrl.Result{}, retErr
}

// gitStep is one step of a GitRepository reconciliation.
type gitStep func(ctx context.Context, obj *sourcev1.GitRepository, sc *gitScope) (reconcile.Result, error)

// runSteps runs the steps in order, stopping at the first error.
func (r *GitRepositoryReconciler) runSteps(ctx context.Context, obj *sourcev1.GitRepository, sc *gitScope) (reconcile.Result, error) {
	steps := []gitStep{r.reconcileStorage, r.reconcileSource, r.reconcileInclude, r.reconcileArtifact}
	var res reconcile.Result
	for _, step := range steps {
		stepRes, err := step(ctx, obj, sc)
		if err != nil {
			return stepRes, err
		}
		res = reconcile.LowestRequeuingResult(res, stepRes)
	}
	return res, nil
}

// summarizeAndPatch writes the outcome of the run to the object's status,
// records a warning event for a failure, and patches the object.
func (r *GitRepositoryReconciler) summarizeAndPatch(ctx context.Context, obj *sourcev1.GitRepository,
	patcher *patch.Helper, res reconcile.Result, err error) (ctrl.Result, error) {
	successMessage := ""
	if obj.Status.Artifact != nil {
		successMessage = fmt.Sprintf("stored artifact for revision '%s'", obj.Status.Artifact.Revision)
	}
	result, err := reconcile.Summarize(obj, reconcile.Summary{
		Result:             res,
		Err:                err,
		NegativeConditions: gitRepositoryNegativeConditions,
		SuccessReason:      meta.SucceededReason,
		SuccessMessage:     successMessage,
		Interval:           obj.Spec.Interval.Duration,
		JitterPercent:      r.JitterPercent,
	})
	if err != nil {
		r.event(obj, corev1.EventTypeWarning, conditions.Reason(obj, meta.ReadyCondition), conditions.Message(obj, meta.ReadyCondition))
	}
	if patchErr := patcher.Patch(ctx, obj); patchErr != nil {
		ctrl.LoggerFrom(ctx).Error(patchErr, "Failed to patch the status")
		if err == nil {
			err = patchErr
		}
	}
	return result, err
}

// reconcileDelete removes the object's artifacts from storage, then its
// finalizer.
func (r *GitRepositoryReconciler) reconcileDelete(ctx context.Context, obj *sourcev1.GitRepository) (ctrl.Result, error) {
	if !controllerutil.ContainsFinalizer(obj, meta.Finalizer) {
		return ctrl.Result{}, nil
	}
	dir := r.Storage.NewArtifactFor(sourcev1.GitRepositoryKind, obj, "", "*")
	if _, err := r.Storage.RemoveAll(dir); err != nil {
		r.event(obj, corev1.EventTypeWarning, sourcev1.StorageOperationFailedReason,
			fmt.Sprintf("failed to remove the artifacts: %s", err))
		return ctrl.Result{}, err
	}
	patcher := patch.NewHelper(obj, r.Client)
	controllerutil.RemoveFinalizer(obj, meta.Finalizer)
	metrics.Forget(sourcev1.GitRepositoryKind, obj)
	return ctrl.Result{}, patcher.Patch(ctx, obj)
}

// event records a Kubernetes event about obj, without credentials.
func (r *GitRepositoryReconciler) event(obj *sourcev1.GitRepository, eventType, reason, message string) {
	if r.EventRecorder == nil {
		return
	}
	r.EventRecorder.Eventf(obj, nil, eventType, reason, "Reconcile", "%s", redact.String(message))
}

// gitScope carries what the steps of one run learn.
type gitScope struct {
	// workDir holds the checkout; removed when the run ends.
	workDir string
	// commit is what the checkout resolved to.
	commit *git.Commit
	// includes are the artifacts of the included repositories, in spec
	// order.
	includes []*meta.Artifact
	// upToDate is set when the stored artifact already reflects the upstream
	// revision and the spec, so that nothing needs building.
	upToDate bool
	// announce patches the status of a new generation, for a clone that
	// takes long (see reconcile.AnnounceIfSlow).
	announce func(context.Context) error
}

func (sc *gitScope) cleanup() {
	if sc.workDir != "" {
		_ = os.RemoveAll(sc.workDir)
	}
}
