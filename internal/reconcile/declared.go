package reconcile

import (
	"context"
	"fmt"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	ctrlreconcile "sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	gatingv1alpha1 "github.com/windlass-dev/windlass/api/gating/v1alpha1"
	"github.com/windlass-dev/windlass/internal/kinds"
	"github.com/windlass-dev/windlass/internal/predicates"
	"github.com/windlass-dev/windlass/internal/reconcile/dependency"
	"github.com/windlass-dev/windlass/internal/reconcile/gate"
	"github.com/windlass-dev/windlass/internal/reconcile/outcome"
	"github.com/windlass-dev/windlass/internal/reconcile/sourceref"
)

// The field indexes the runner keeps of a kind's objects.
const (
	// DependsOnIndex indexes objects by the objects they depend on
	// (dependency.IndexKey).
	DependsOnIndex = ".spec.dependsOn"
	// SourceRefIndex indexes objects by the source they use
	// (sourceref.Key).
	SourceRefIndex = ".spec.sourceRef"
)

// SourceRef declares that the objects of a kind use the artifact of a
// source: the runner indexes them by it and watches the source kinds, so
// that a new artifact reconciles the objects that use it at once.
type SourceRef[T any] struct {
	// Use is the reference: the registry's kinds that it may name are
	// watched.
	Use kinds.Use
	// Ref returns the source that obj uses.
	Ref func(obj T) sourceref.Ref
	// Refs, in place of Ref, returns the sources obj uses, for a kind
	// whose objects use several.
	Refs func(obj T) []sourceref.Ref
	// Wakes, when set, returns which changes of a source of kind reconcile
	// the objects that use it; nil is a new artifact.
	Wakes func(kind string) predicate.Predicate
	// Events, when set, returns the handler of the watch on the sources of
	// kind, in place of one that reconciles every object that uses the
	// source (listed through SourceRefIndex) alike.
	Events func(kind string) handler.EventHandler
}

// Setup registers the controller of the runner's kind with mgr, with opts:
// it reconciles an object when its generation changes or a reconcile is
// requested, and, from what the kind declares, when something it waits
// for changes. A kind whose registry row has gates is reconciled when one
// of its gates opens or closes; one with dependsOn when an object it
// depends on becomes Ready; one with a SourceRef when its source has a new
// artifact. The kind adds its own watches to the returned builder, then
// completes it with the runner.
func (r *Runner[T]) Setup(ctx context.Context, mgr ctrl.Manager, opts ControllerOptions) (*builder.Builder, error) {
	row, ok := kinds.Named(r.Kind.Name)
	if !ok {
		return nil, fmt.Errorf("setting up %s: no such kind in the registry", r.Kind.Name)
	}
	if r.Kind.Finalize != nil && !row.Finalized {
		return nil, fmt.Errorf("setting up %s: a Finalize, but the registry gives the kind no finalizer", r.Kind.Name)
	}
	obj := r.Kind.New()
	b := NewControllerManagedBy(mgr, obj, opts)
	if opts.Sharder != nil {
		r.sharder = opts.Sharder
		b = b.WatchesRawSource(opts.Sharder.Moved(r.Kind.Name))
	}
	indexer := mgr.GetFieldIndexer()
	if row.Gates != kinds.NoGates {
		if err := indexer.IndexField(ctx, obj, gate.IndexKey, gate.IndexValues); err != nil {
			return nil, fmt.Errorf("indexing %s gates: %w", row.Kind, err)
		}
		b = b.Watches(&gatingv1alpha1.Gate{}, gate.EnqueueConsumers(r.Client, row.NewList),
			builder.WithPredicates(gate.OpenedChanged()))
	}
	if row.DependsOn != nil {
		if err := indexer.IndexField(ctx, obj, DependsOnIndex, dependsOnKeys(row)); err != nil {
			return nil, fmt.Errorf("indexing %s dependencies: %w", row.Kind, err)
		}
		for _, dep := range kinds.WithDependsOn() {
			b = b.Watches(dep.New(), r.enqueueIndexed(row, DependsOnIndex, func(o client.Object) string { return dependency.IndexKeyOf(dep.Kind, o) }),
				builder.WithPredicates(predicates.BecameReady{}))
		}
	}
	if s := r.Kind.SourceRef; s != nil {
		if err := indexer.IndexField(ctx, obj, SourceRefIndex, s.indexKeys); err != nil {
			return nil, fmt.Errorf("indexing %s sources: %w", row.Kind, err)
		}
		for _, src := range kinds.SourcesFor(s.Use) {
			var wakes predicate.Predicate = predicate.Or[client.Object](predicates.ArtifactChanged{}, predicates.ArtifactMoved{})
			if s.Wakes != nil {
				wakes = s.Wakes(src.Kind)
			}
			events := r.enqueueIndexed(row, SourceRefIndex, func(o client.Object) string { return sourceref.KeyOf(src.Kind, o) })
			if s.Events != nil {
				events = s.Events(src.Kind)
			}
			b = b.Watches(src.New(), events, builder.WithPredicates(wakes))
			if opts.ArtifactsStoredAgain != nil {
				b = b.WatchesRawSource(source.Channel(opts.ArtifactsStoredAgain(src.Kind), events))
			}
		}
	}
	return b, nil
}

// indexKeys returns the SourceRefIndex keys of o: those of its sources.
func (s *SourceRef[T]) indexKeys(o client.Object) []string {
	if s.Refs == nil {
		return []string{sourceref.Key(o.GetNamespace(), s.Ref(o.(T)))}
	}
	refs := s.Refs(o.(T))
	keys := make([]string, 0, len(refs))
	for _, ref := range refs {
		keys = append(keys, sourceref.Key(o.GetNamespace(), ref))
	}
	return keys
}

// dependsOnKeys returns the index function of the dependencies of row's
// objects.
func dependsOnKeys(row kinds.Kind) client.IndexerFunc {
	return func(o client.Object) []string {
		deps := row.DependsOn(o)
		keys := make([]string, 0, len(deps))
		for _, d := range deps {
			keys = append(keys, dependency.IndexKey(row.Kind, o, d))
		}
		return keys
	}
}

// enqueueIndexed returns the handler of a watch that reconciles the
// objects of row whose index holds key(o), o the changed object, listed
// from the cache.
func (r *Runner[T]) enqueueIndexed(row kinds.Kind, index string, key func(o client.Object) string) handler.EventHandler {
	return handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []ctrlreconcile.Request {
		list := row.NewList()
		if err := r.Client.List(ctx, list, client.MatchingFields{index: key(o)}); err != nil {
			ctrl.LoggerFrom(ctx).Error(err, "Listing the objects to reconcile", "kind", row.Kind)
			return nil
		}
		items := row.Items(list)
		reqs := make([]ctrlreconcile.Request, 0, len(items))
		for _, item := range items {
			reqs = append(reqs, ctrlreconcile.Request{NamespacedName: client.ObjectKeyFromObject(item)})
		}
		return reqs
	})
}

// Admit runs what comes before the kind's steps: CheckSpec, then the
// gates of a kind that has them (gate.Enforce, in the role of the kind's
// registry row), then Held when a gate holds the run. It returns nil when
// the run may go on. Exported so that a kind can test it step by step.
func (r *Runner[T]) Admit(ctx context.Context, obj T) error {
	if r.Kind.CheckSpec != nil {
		if err := r.Kind.CheckSpec(obj); err != nil {
			return err
		}
	}
	row, ok := kinds.Named(r.Kind.Name)
	if !ok || row.Gates == kinds.NoGates {
		return nil
	}
	consumer, ok := any(obj).(gate.StatusConsumer)
	if !ok {
		return fmt.Errorf("%s has gates in the registry but no spec.gates", r.Kind.Name)
	}
	requeue := obj.GetRequeueAfter()
	if r.Kind.GateRequeue != nil {
		requeue = r.Kind.GateRequeue(obj)
	}
	err := gate.Enforce(ctx, r.Client, r.Events, consumer, row.Gates, r.NoCrossNamespaceRefs, requeue)
	if r.Kind.Held != nil && outcome.IsHolding(err) {
		return r.Kind.Held(ctx, obj, err)
	}
	return err
}
