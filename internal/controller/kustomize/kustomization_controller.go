package kustomize

import (
	"context"
	"errors"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	ctrlreconcile "sigs.k8s.io/controller-runtime/pkg/reconcile"

	gatingv1alpha1 "github.com/windlass-dev/windlass/api/gating/v1alpha1"
	helmv2 "github.com/windlass-dev/windlass/api/helm/v2"
	kustomizev1 "github.com/windlass-dev/windlass/api/kustomize/v1"
	"github.com/windlass-dev/windlass/internal/dependency"
	"github.com/windlass-dev/windlass/internal/event"
	"github.com/windlass-dev/windlass/internal/fetch"
	"github.com/windlass-dev/windlass/internal/gate"
	"github.com/windlass-dev/windlass/internal/impersonation"
	"github.com/windlass-dev/windlass/internal/predicates"
	"github.com/windlass-dev/windlass/internal/reconcile"
	"github.com/windlass-dev/windlass/internal/sourceref"
)

// +kubebuilder:rbac:groups=kustomize.toolkit.fluxcd.io,resources=kustomizations,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=kustomize.toolkit.fluxcd.io,resources=kustomizations/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=kustomize.toolkit.fluxcd.io,resources=kustomizations/finalizers,verbs=get;create;update;patch;delete
// +kubebuilder:rbac:groups=source.toolkit.fluxcd.io,resources=gitrepositories;ocirepositories;buckets,verbs=get;list;watch
// +kubebuilder:rbac:groups=gating.toolkit.fluxcd.io,resources=gates,verbs=get;list;watch
// +kubebuilder:rbac:groups=helm.toolkit.fluxcd.io,resources=helmreleases,verbs=get;list;watch
// +kubebuilder:rbac:groups="*",resources="*",verbs="*"

// Index keys of Kustomizations.
const (
	sourceIndexKey     = ".spec.sourceRef"
	dependencyIndexKey = ".spec.dependsOn"
)

// KustomizationReconciler reconciles Kustomization objects.
type KustomizationReconciler struct {
	client.Client
	// Events records events about Kustomizations.
	Events *event.Recorder
	// Fetcher gets source artifacts.
	Fetcher fetch.Fetcher
	// Applier builds the clients that apply, check health and prune, for
	// the Kustomization's target cluster and identity.
	Applier *impersonation.Factory
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
	trees   fetch.TreeCache
}

// kustomizationKind is the Kustomization kind for the runner. A failed
// run is retried after spec.retryInterval, as the reference does, not with
// backoff.
func (r *KustomizationReconciler) kustomizationKind() reconcile.Kind[*kustomizev1.Kustomization] {
	return reconcile.Kind[*kustomizev1.Kustomization]{
		Name:          kustomizev1.KustomizationKind,
		New:           func() *kustomizev1.Kustomization { return &kustomizev1.Kustomization{} },
		SuccessReason: kustomizev1.ReconciliationSucceededReason,
		SuccessMessage: func(obj *kustomizev1.Kustomization) string {
			return fmt.Sprintf("Applied revision: %s", obj.Status.LastAppliedRevision)
		},
		Revision:        func(obj *kustomizev1.Kustomization) string { return obj.Status.LastAttemptedRevision },
		Run:             r.run,
		Finalize:        r.finalize,
		Forget:          r.forget,
		RetryInterval:   (*kustomizev1.Kustomization).GetRetryInterval,
		Summarized:      summarized,
		RecheckedFields: recheckedFields,
	}
}

// runner returns the runner of Kustomizations.
func (r *KustomizationReconciler) runner() *reconcile.Runner[*kustomizev1.Kustomization] {
	return &reconcile.Runner[*kustomizev1.Kustomization]{
		Client: r.Client, Events: r.Events, JitterPercent: r.JitterPercent, Kind: r.kustomizationKind(),
	}
}

// SetupWithManager registers the reconciler with mgr: it watches
// Kustomizations, the sources they use (a new artifact reconciles them at
// once), their dependencies (a dependency that becomes ready reconciles
// its dependents at once) and their gates (a gate that opens or closes
// reconciles the Kustomizations behind it at once).
func (r *KustomizationReconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager, opts reconcile.ControllerOptions) error {
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
			keys = append(keys, dependency.IndexKey(kustomizev1.KustomizationKind, k, d))
		}
		return keys
	}); err != nil {
		return err
	}
	if err := indexer.IndexField(ctx, &kustomizev1.Kustomization{}, gate.IndexKey, gate.IndexValues); err != nil {
		return err
	}
	// Extracted artifacts are removed when the manager stops.
	if err := mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		<-ctx.Done()
		r.trees.RemoveAll()
		return nil
	})); err != nil {
		return err
	}
	b := reconcile.NewControllerManagedBy(mgr, &kustomizev1.Kustomization{}, opts).
		Watches(&kustomizev1.Kustomization{},
			handler.EnqueueRequestsFromMapFunc(r.requestsForDependents(kustomizev1.KustomizationKind)),
			builder.WithPredicates(predicates.BecameReady{})).
		Watches(&helmv2.HelmRelease{},
			handler.EnqueueRequestsFromMapFunc(r.requestsForDependents(helmv2.HelmReleaseKind)),
			builder.WithPredicates(predicates.BecameReady{})).
		Watches(&gatingv1alpha1.Gate{}, r.gateEvents(), builder.WithPredicates(gate.OpenedChanged()))
	for kind, newSource := range sourceref.Served() {
		b = b.Watches(newSource(), r.sourceEvents(kind), builder.WithPredicates(predicates.ArtifactChanged{}))
	}
	return b.Complete(r.runner())
}

// requestsForDependents returns the handler of a dependency of kind that
// became ready: it reconciles the Kustomizations that depend on it.
func (r *KustomizationReconciler) requestsForDependents(kind string) handler.MapFunc {
	return func(ctx context.Context, o client.Object) []ctrlreconcile.Request {
		return r.requestsFor(ctx, client.MatchingFields{dependencyIndexKey: dependency.IndexKeyOf(kind, o)})
	}
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

// summarized records the outcome of a run in the history, and sends a
// health recheck soon after an apply ahead of other work. A run held by a
// gate is not recorded.
func summarized(_ context.Context, obj *kustomizev1.Kustomization, o *reconcile.Outcome) {
	var (
		progressing *reconcile.Progressing
		holding     *reconcile.Holding
	)
	if errors.As(o.Err, &holding) {
		// A run that a gate held back did nothing: no outcome either.
		return
	}
	if !errors.As(o.Err, &progressing) {
		// A health check in progress is no outcome for the history.
		recordHistory(obj, time.Since(o.Started))
		return
	}
	if progressing.RequeueAfter < maxHealthRecheck {
		// A recheck soon after an apply is short, and the status it
		// writes is what users wait for: it goes before the runs that
		// apply other revisions. Longer waits poll at the normal
		// priority, so that many slow objects cannot hold new revisions
		// back.
		o.Result.Priority = ptr.To(urgentPriority)
	}
}

// recheckedFields are the status fields that every run sets again from
// what it observes, so that a quiet run may leave them to its recheck. The
// others, such as the inventory after a prune, are written at once. (A
// Kustomization suspended before its recheck keeps the last written values,
// until it is resumed.)
var recheckedFields = []string{"conditions", "lastAppliedRevision", "lastAttemptedRevision", "lastHandledReconcileAt"}

// Priorities of a Kustomization's next run in the work queue: health
// rechecks and Kustomizations whose folder a new artifact changed are
// urgent.
const (
	normalPriority = reconcile.NormalPriority
	urgentPriority = normalPriority + 1
)

// forget drops what the reconciler remembers of a Kustomization.
func (r *KustomizationReconciler) forget(key types.NamespacedName) {
	r.applied.forget(key)
	r.waits.end(key)
}
