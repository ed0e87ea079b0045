package kustomize

import (
	"context"
	"errors"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	ctrlreconcile "sigs.k8s.io/controller-runtime/pkg/reconcile"

	kustomizev1 "github.com/windlass-dev/windlass/api/kustomize/v1"
	"github.com/windlass-dev/windlass/api/meta"
	sourcev1 "github.com/windlass-dev/windlass/api/source/v1"
	"github.com/windlass-dev/windlass/internal/conditions"
	"github.com/windlass-dev/windlass/internal/fetch"
	"github.com/windlass-dev/windlass/internal/metrics"
	"github.com/windlass-dev/windlass/internal/patch"
	"github.com/windlass-dev/windlass/internal/predicates"
	"github.com/windlass-dev/windlass/internal/reconcile"
	"github.com/windlass-dev/windlass/internal/redact"
)

// +kubebuilder:rbac:groups=kustomize.toolkit.fluxcd.io,resources=kustomizations,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=kustomize.toolkit.fluxcd.io,resources=kustomizations/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=kustomize.toolkit.fluxcd.io,resources=kustomizations/finalizers,verbs=get;create;update;patch;delete
// +kubebuilder:rbac:groups=source.toolkit.fluxcd.io,resources=gitrepositories,verbs=get;list;watch
// +kubebuilder:rbac:groups="*",resources="*",verbs="*"

// FieldManager is the server-side apply field manager of applied objects:
// the reference implementation's, so that clusters move over without
// conflicts.
const FieldManager = "kustomize-controller"

// Index keys of Kustomizations.
const (
	sourceIndexKey     = ".spec.sourceRef"
	dependencyIndexKey = ".spec.dependsOn"
)

// kustomizationNegativeConditions explain a Ready=False, most important
// first.
var kustomizationNegativeConditions = []string{meta.StalledCondition}

// KustomizationReconciler reconciles Kustomization objects.
type KustomizationReconciler struct {
	client.Client
	// EventRecorder records Kubernetes events about Kustomizations.
	EventRecorder events.EventRecorder
	// Fetcher gets source artifacts.
	Fetcher fetch.Fetcher
	// Applier builds the clients that apply, check health and prune, for
	// the Kustomization's target cluster and identity.
	Applier *ApplierFactory
	// JitterPercent spreads each object's interval.
	JitterPercent int
	// DependencyRequeue is how long to wait for a dependency or a source.
	DependencyRequeue time.Duration
	// NoCrossNamespaceRefs refuses references to other namespaces.
	NoCrossNamespaceRefs bool
	// NoRemoteBases refuses remote kustomize bases.
	NoRemoteBases bool
	// Changes, when set, tells which folders of a source's tree a new
	// artifact changed: the Kustomizations of those folders are reconciled
	// first. The artifact storage of an in-process source controller can.
	Changes ChangedPaths

	waits   healthWaits
	applied appliedStates
	trees   sourceTrees
}

// KustomizationOptions tune the controller.
type KustomizationOptions struct {
	// MaxConcurrentReconciles is how many objects are reconciled at once.
	MaxConcurrentReconciles int
	// RateLimiter spaces the retries of failed reconciliations.
	RateLimiter workqueue.TypedRateLimiter[ctrlreconcile.Request]
}

// SetupWithManager registers the reconciler with mgr: it watches
// Kustomizations, the sources they use (a new artifact reconciles them at
// once) and their dependencies (a dependency that becomes ready reconciles
// its dependents at once).
func (r *KustomizationReconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager, opts KustomizationOptions) error {
	indexer := mgr.GetFieldIndexer()
	if err := indexer.IndexField(ctx, &kustomizev1.Kustomization{}, sourceIndexKey, func(o client.Object) []string {
		return []string{sourceKey(o.(*kustomizev1.Kustomization))}
	}); err != nil {
		return err
	}
	if err := indexer.IndexField(ctx, &kustomizev1.Kustomization{}, dependencyIndexKey, func(o client.Object) []string {
		k := o.(*kustomizev1.Kustomization)
		keys := make([]string, 0, len(k.Spec.DependsOn))
		for _, d := range k.Spec.DependsOn {
			keys = append(keys, dependencyKey(k, d).String())
		}
		return keys
	}); err != nil {
		return err
	}
	// Extracted artifacts are removed when the manager stops.
	if err := mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		<-ctx.Done()
		r.trees.removeAll()
		return nil
	})); err != nil {
		return err
	}
	return ctrl.NewControllerManagedBy(mgr).
		For(&kustomizev1.Kustomization{}, builder.WithPredicates(
			predicate.Or(predicate.GenerationChangedPredicate{}, predicates.ReconcileRequested{}),
		)).
		Watches(&sourcev1.GitRepository{}, r.sourceEvents(sourcev1.GitRepositoryKind),
			builder.WithPredicates(predicates.ArtifactChanged{})).
		Watches(&kustomizev1.Kustomization{},
			handler.EnqueueRequestsFromMapFunc(r.requestsForDependents),
			builder.WithPredicates(predicates.BecameReady{})).
		WithOptions(controller.Options{
			MaxConcurrentReconciles: opts.MaxConcurrentReconciles,
			RateLimiter:             opts.RateLimiter,
		}).
		Complete(r)
}

func (r *KustomizationReconciler) requestsForDependents(ctx context.Context, o client.Object) []ctrlreconcile.Request {
	key := client.ObjectKeyFromObject(o).String()
	return r.requestsFor(ctx, client.MatchingFields{dependencyIndexKey: key})
}

func (r *KustomizationReconciler) requestsFor(ctx context.Context, match client.MatchingFields) []ctrlreconcile.Request {
	list := r.list(ctx, match)
	reqs := make([]ctrlreconcile.Request, 0, len(list.Items))
	for i := range list.Items {
		reqs = append(reqs, ctrlreconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
	}
	return reqs
}

// list returns the Kustomizations that match, or none when the cache
// cannot be listed.
func (r *KustomizationReconciler) list(ctx context.Context, match client.MatchingFields) *kustomizev1.KustomizationList {
	var list kustomizev1.KustomizationList
	if err := r.List(ctx, &list, match); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Listing Kustomizations to wake")
	}
	return &list
}

// Reconcile runs the pipeline for one Kustomization.
func (r *KustomizationReconciler) Reconcile(ctx context.Context, req ctrl.Request) (result ctrl.Result, retErr error) {
	// A run that asks for no priority of its own ends at the normal one:
	// the queue would otherwise keep the priority the run came in with.
	defer func() {
		if result.Priority == nil {
			result.Priority = ptr.To(normalPriority)
		}
	}()
	start := time.Now()
	obj := &kustomizev1.Kustomization{}
	if err := r.Get(ctx, req.NamespacedName, obj); err != nil {
		if apierrors.IsNotFound(err) {
			r.forget(req.NamespacedName)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	defer metrics.RecordDuration(kustomizev1.KustomizationKind, obj, start)

	if !obj.DeletionTimestamp.IsZero() {
		return r.reconcileDelete(ctx, obj)
	}
	patcher := patch.NewHelper(obj, r.Client)
	if proceed, err := reconcile.Prepare(ctx, kustomizev1.KustomizationKind, obj, obj.Spec.Suspend, patcher); !proceed {
		return ctrl.Result{}, err
	}

	var res reconcile.Result
	defer func() {
		result, retErr = r.summarizeAndPatch(ctx, obj, patcher, res, retErr, start)
	}()
	res, retErr = r.reconcile(ctx, obj, patcher)
	return ctrl.Result{}, retErr
}

// summarizeAndPatch writes the run's outcome to the status, records a
// warning for a failure and patches the object. After a failure the object
// is retried at its retryInterval at the latest.
func (r *KustomizationReconciler) summarizeAndPatch(ctx context.Context, obj *kustomizev1.Kustomization,
	patcher *patch.Helper, res reconcile.Result, err error, start time.Time) (ctrl.Result, error) {
	successMessage := fmt.Sprintf("Applied revision: %s", obj.Status.LastAppliedRevision)
	// A health check in progress is no outcome for the history.
	var progressing *reconcile.Progressing
	outcome := !errors.As(err, &progressing)
	result, err := reconcile.Summarize(obj, reconcile.Summary{
		Result:             res,
		Err:                err,
		NegativeConditions: kustomizationNegativeConditions,
		SuccessReason:      kustomizev1.ReconciliationSucceededReason,
		SuccessMessage:     successMessage,
		Interval:           obj.Spec.Interval.Duration,
		JitterPercent:      r.JitterPercent,
	})
	if outcome {
		recordHistory(obj, time.Since(start))
	}
	if progressing != nil {
		if progressing.RequeueAfter < maxHealthRecheck {
			// A recheck soon after an apply is short, and the status it
			// writes is what users wait for: it goes before the runs that
			// apply other revisions. Longer waits poll at the normal
			// priority, so that many slow objects cannot hold new revisions
			// back.
			result.Priority = ptr.To(urgentPriority)
		}
		if progressing.Quiet && onlyRecheckedFieldsChanged(ctx, obj, patcher) {
			return result, nil
		}
	}
	if err != nil {
		r.event(obj, "Warning", conditions.Reason(obj, meta.ReadyCondition), conditions.Message(obj, meta.ReadyCondition))
		if !isTerminal(err) {
			// A failed run is retried with backoff, and at the latest after
			// the retry interval.
			result.RequeueAfter = obj.GetRetryInterval()
			err = nil
		}
	}
	if patchErr := patcher.Patch(ctx, obj); patchErr != nil {
		ctrl.LoggerFrom(ctx).Error(patchErr, "Failed to patch the status")
		if err == nil {
			err = patchErr
		}
	}
	return result, err
}

// recheckedFields are the status fields that every run sets again from
// what it observes, so that a quiet run may leave them to its recheck. The
// others, such as the inventory after a prune, are written at once. (A
// Kustomization suspended before its recheck keeps the last written values,
// until it is resumed.)
var recheckedFields = map[string]bool{
	"conditions": true, "lastAppliedRevision": true, "lastAttemptedRevision": true, "lastHandledReconcileAt": true,
}

// onlyRecheckedFieldsChanged reports whether the changes to obj that the
// patcher would send are all in recheckedFields.
func onlyRecheckedFieldsChanged(ctx context.Context, obj *kustomizev1.Kustomization, patcher *patch.Helper) bool {
	fields, others, err := patcher.Changes(obj)
	if err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Comparing the status with the last one written")
		return false
	}
	if others {
		return false
	}
	for _, f := range fields {
		if !recheckedFields[f] {
			return false
		}
	}
	return true
}

// Priorities of a Kustomization's next run in the work queue: health
// rechecks and Kustomizations whose folder a new artifact changed are
// urgent.
const (
	normalPriority = 0
	urgentPriority = 1
)

// forget drops what the reconciler remembers of a Kustomization.
func (r *KustomizationReconciler) forget(key types.NamespacedName) {
	r.applied.forget(key)
	r.waits.end(key)
}

// event records a Kubernetes event about obj, without credentials.
func (r *KustomizationReconciler) event(obj *kustomizev1.Kustomization, eventType, reason, message string) {
	if r.EventRecorder == nil || message == "" {
		return
	}
	r.EventRecorder.Eventf(obj, nil, eventType, reason, "Reconcile", "%s", redact.String(message))
}

// isTerminal reports whether err is a terminal error: one that no retry
// mends.
func isTerminal(err error) bool {
	return errors.Is(err, ctrlreconcile.TerminalError(nil))
}
