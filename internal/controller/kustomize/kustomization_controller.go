package kustomize

import (
	"context"
	"errors"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlevent "sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/source"

	kustomizev1 "github.com/windlass-dev/windlass/api/kustomize/v1"
	"github.com/windlass-dev/windlass/api/meta"
	"github.com/windlass-dev/windlass/internal/build"
	"github.com/windlass-dev/windlass/internal/event"
	"github.com/windlass-dev/windlass/internal/fetch"
	"github.com/windlass-dev/windlass/internal/health"
	"github.com/windlass-dev/windlass/internal/impersonation"
	"github.com/windlass-dev/windlass/internal/kinds"
	"github.com/windlass-dev/windlass/internal/reconcile"
	"github.com/windlass-dev/windlass/internal/reconcile/outcome"
)

// +kubebuilder:rbac:groups=kustomize.toolkit.fluxcd.io,resources=kustomizations,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=kustomize.toolkit.fluxcd.io,resources=kustomizations/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=kustomize.toolkit.fluxcd.io,resources=kustomizations/finalizers,verbs=get;create;update;patch;delete
// +kubebuilder:rbac:groups=source.toolkit.fluxcd.io,resources=gitrepositories;ocirepositories;buckets,verbs=get;list;watch
// +kubebuilder:rbac:groups=gating.toolkit.fluxcd.io,resources=gates,verbs=get;list;watch
// +kubebuilder:rbac:groups=helm.toolkit.fluxcd.io,resources=helmreleases,verbs=get;list;watch
// +kubebuilder:rbac:groups="*",resources="*",verbs="*"

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
	// StoredAgainHere tells which sources' artifacts this process's source
	// controller is storing again under its own address (see
	// sourceref.Resolver.StoredAgainHere).
	StoredAgainHere func(kind string, source client.Object, a meta.Artifact) bool
	// NoCrossNamespaceRefs refuses references to other namespaces.
	NoCrossNamespaceRefs bool
	// NoRemoteBases refuses remote kustomize bases.
	NoRemoteBases bool
	// Changes, when set, tells which folders of a source's tree a new
	// artifact changed: the Kustomizations of those folders are reconciled
	// first. The artifact storage of an in-process source controller can.
	Changes ChangedPaths
	// Builder runs the kustomize builds: large ones in child processes
	// that spec.timeout ends. Nil stands for one with the default limits.
	Builder *build.Builder
	// Versions, when set, tells the resourceVersion of the objects applied
	// to the local cluster, so that a run with nothing new reads none of
	// them (see versions.go), and that a run with no memory of the last
	// apply can take it from the status (see verified.go).
	Versions VersionWatch
	// Health, when set, tells the health of the objects applied to the
	// local cluster as a watch last saw them, so that a health check that
	// waits for an object reads it only when the watch cannot tell (see
	// health.Pending).
	Health HealthWatch
	// Wakes, when set with Health, tells of the objects whose health the
	// watch judged anew, so that a Kustomization whose wait it decides is
	// woken at once (see wake.go).
	Wakes *health.Wakes

	waits   healthWaits
	wakes   chan<- ctrlevent.GenericEvent
	heads   headStarts
	applied appliedStates
	healthy healthyVersions
	trees   fetch.TreeCache
	// unwritten counts the runs not yet written to status.history.
	unwritten unwrittenRuns
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
		Revision:  func(obj *kustomizev1.Kustomization) string { return obj.Status.LastAttemptedRevision },
		CheckSpec: checkServed,
		SourceRef: &reconcile.SourceRef[*kustomizev1.Kustomization]{
			Use: kinds.KustomizationSource, Ref: sourceRef, Events: r.sourceEvents,
		},
		Run:             r.run,
		Finalize:        r.finalize,
		Forget:          r.forget,
		RetryInterval:   (*kustomizev1.Kustomization).GetRetryInterval,
		Summarized:      r.summarized,
		RecheckedFields: recheckedFields,
	}
}

// runner returns the runner of Kustomizations.
func (r *KustomizationReconciler) runner() *reconcile.Runner[*kustomizev1.Kustomization] {
	return &reconcile.Runner[*kustomizev1.Kustomization]{
		Client: r.Client, Events: r.Events, JitterPercent: r.JitterPercent, NoCrossNamespaceRefs: r.NoCrossNamespaceRefs,
		Kind: r.kustomizationKind(),
	}
}

// SetupWithManager registers the reconciler with mgr: the runner watches
// Kustomizations, the sources they use (a new artifact reconciles them at
// once, those whose folder changed first), their dependencies (one that
// becomes ready reconciles its dependents at once) and their gates; the
// watch of the applied objects ends health waits.
func (r *KustomizationReconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager, opts reconcile.ControllerOptions) error {
	// Extracted artifacts are removed when the manager stops.
	if err := mgr.Add(reconcile.OnStop(r.trees.RemoveAll)); err != nil {
		return err
	}
	runner := r.runner()
	b, err := runner.Setup(ctx, mgr, opts)
	if err != nil {
		return err
	}
	if r.Wakes != nil {
		b = b.WatchesRawSource(source.Channel(r.wakeOnHealth(), wakeHandler()))
	}
	return b.Complete(runner)
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

// summarized records the outcome of a run in the history (see recordRun),
// and sends a health recheck soon after an apply ahead of other work. A
// run held by a gate is not recorded.
func (r *KustomizationReconciler) summarized(_ context.Context, obj *kustomizev1.Kustomization, o *reconcile.Outcome) {
	var (
		progressing *outcome.Progressing
		holding     *outcome.Holding
	)
	if errors.As(o.Err, &holding) {
		// A run that a gate held back did nothing: no outcome either.
		return
	}
	if !errors.As(o.Err, &progressing) {
		// A health check in progress is no outcome for the history.
		r.recordRun(obj, time.Since(o.Started), o.Unchanged)
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
// what it observes, or restores from what the reconciler remembers (the
// inventory of the last complete apply, see restoreInventory), so that a
// quiet run may leave them to its recheck: an apply and its first health
// check cost no status write of their own. The others are written at once.
// (A Kustomization suspended before its recheck keeps the last written
// values, until it is resumed.)
var recheckedFields = []string{"conditions", "lastAppliedRevision", "lastAppliedOriginRevision", "lastAttemptedRevision",
	"lastHandledReconcileAt", "inventory"}

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
	r.healthy.forget(key)
	r.unwritten.take(key)
}
