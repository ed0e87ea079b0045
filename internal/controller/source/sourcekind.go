package source

import (
	"context"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/windlass-dev/windlass/api/meta"
	"github.com/windlass-dev/windlass/internal/event"
	"github.com/windlass-dev/windlass/internal/patch"
	"github.com/windlass-dev/windlass/internal/reconcile"
	"github.com/windlass-dev/windlass/internal/reconcile/outcome"
)

// sourceKind returns the runner's Kind of a source kind: what every source
// kind shares (the storage steps, the Ready message, the revision of its
// events, the removal of its artifacts once it is gone) around its own
// steps, run.
func sourceKind[T sourceObject](store artifactStore, newObject func() T, negative []string, checkServed func(T) error,
	run func(context.Context, T, *patch.Helper) (outcome.Result, error)) reconcile.Kind[T] {
	return reconcile.Kind[T]{
		Name:               store.kind,
		New:                newObject,
		NegativeConditions: negative,
		CheckSpec:          checkServed,
		SuccessReason:      meta.SucceededReason,
		SuccessMessage:     storedMessage[T],
		Revision:           artifactRevision[T],
		Run:                endingStoring(store, run),
		Gone:               store.removeGone,
		Forget:             store.forget,
	}
}

// endingStoring returns run, ending when it ends the wait of the readers
// of an artifact of store's that it was storing again (see
// artifact.Storage.Storing), stored or not.
func endingStoring[T sourceObject](store artifactStore, run func(context.Context, T, *patch.Helper) (outcome.Result, error)) func(context.Context, T, *patch.Helper) (outcome.Result, error) {
	return func(ctx context.Context, obj T, p *patch.Helper) (outcome.Result, error) {
		defer store.storage.EndStoring(store.kind, obj)
		return run(ctx, obj, p)
	}
}

// gatedSource is what a source controller needs to be set up: the
// manager's client, its events, the spread of its intervals, and whether
// gates in other namespaces are refused.
type gatedSource struct {
	client               client.Client
	events               *event.Recorder
	jitterPercent        int
	noCrossNamespaceRefs bool
}

// newControllerFor returns the runner of kind and the builder of its
// controller, set up by the runner (Runner.Setup: its gates, its sources);
// the caller may add watches before it completes it with the runner. When
// the replicas share the objects, the artifacts of the sources handed over
// leave store once their new holder published its own. A reader's ask for
// a deferred artifact (see artifact.Storage.Defer) runs its source.
func newControllerFor[T sourceObject](ctx context.Context, mgr ctrl.Manager, s gatedSource, store artifactStore, kind reconcile.Kind[T],
	opts reconcile.ControllerOptions) (*builder.Builder, *reconcile.Runner[T], error) {
	runner := &reconcile.Runner[T]{
		Client: s.client, Events: s.events, JitterPercent: s.jitterPercent, NoCrossNamespaceRefs: s.noCrossNamespaceRefs, Kind: kind,
	}
	if err := mgr.Add(&goneSweep{store: store, cache: mgr.GetCache(), newObj: func() client.Object { return kind.New() }}); err != nil {
		return nil, nil, err
	}
	if opts.Sharder != nil {
		if err := store.sweepHandedOver(ctx, mgr.GetCache(), kind.New(), opts.Sharder); err != nil {
			return nil, nil, err
		}
	}
	b, err := runner.Setup(ctx, mgr, opts)
	if err != nil {
		return nil, nil, err
	}
	return b.WatchesRawSource(source.Channel(store.storage.AsksFor(kind.Name), &handler.EnqueueRequestForObject{})), runner, nil
}

// artifactRevision returns the revision of a source's artifact, or "".
func artifactRevision[T sourceObject](obj T) string {
	if a := obj.GetArtifact(); a != nil {
		return a.Revision
	}
	return ""
}
