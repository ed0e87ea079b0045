package source

import (
	"context"
	"fmt"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gatingv1alpha1 "github.com/windlass-dev/windlass/api/gating/v1alpha1"
	"github.com/windlass-dev/windlass/api/meta"
	"github.com/windlass-dev/windlass/internal/event"
	"github.com/windlass-dev/windlass/internal/gate"
	"github.com/windlass-dev/windlass/internal/patch"
	"github.com/windlass-dev/windlass/internal/reconcile"
)

// sourceKind returns the runner's Kind of a source kind: what every source
// kind shares (the storage steps, the Ready message, the revision of its
// events, the removal of its artifacts) around its own steps, run.
func sourceKind[T sourceObject](store artifactStore, newObject func() T, negative []string,
	run func(context.Context, T, *patch.Helper) (reconcile.Result, error)) reconcile.Kind[T] {
	return reconcile.Kind[T]{
		Name:               store.kind,
		New:                newObject,
		NegativeConditions: negative,
		SuccessReason:      meta.SucceededReason,
		SuccessMessage:     storedMessage[T],
		Revision:           artifactRevision[T],
		Run:                run,
		Finalize:           func(ctx context.Context, obj T) error { return store.removeAll(ctx, obj) },
		Forget:             store.forgetTrees,
	}
}

// gatedSource is what a source controller needs to be set up: the
// manager's client, its events, and the spread of its intervals.
type gatedSource struct {
	client        client.Client
	events        *event.Recorder
	jitterPercent int
}

// newControllerFor indexes the objects of kind by their gates and returns
// the builder of kind's controller, watching the Gates (a gate that opens or
// closes reconciles the objects behind it at once); the caller may add
// watches before it completes it with the returned runner.
func newControllerFor[T sourceObject](ctx context.Context, mgr ctrl.Manager, s gatedSource, kind reconcile.Kind[T],
	newList func() client.ObjectList, opts reconcile.ControllerOptions) (*builder.Builder, *reconcile.Runner[T], error) {
	obj := kind.New()
	if err := mgr.GetFieldIndexer().IndexField(ctx, obj, gate.IndexKey, gate.IndexValues); err != nil {
		return nil, nil, fmt.Errorf("indexing %s gates: %w", kind.Name, err)
	}
	runner := &reconcile.Runner[T]{Client: s.client, Events: s.events, JitterPercent: s.jitterPercent, Kind: kind}
	b := reconcile.NewControllerManagedBy(mgr, obj, opts).
		Watches(&gatingv1alpha1.Gate{}, gate.EnqueueConsumers(s.client, newList), builder.WithPredicates(gate.OpenedChanged()))
	return b, runner, nil
}

// artifactRevision returns the revision of a source's artifact, or "".
func artifactRevision[T sourceObject](obj T) string {
	if a := obj.GetArtifact(); a != nil {
		return a.Revision
	}
	return ""
}
