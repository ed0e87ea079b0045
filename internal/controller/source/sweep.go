package source

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	toolscache "k8s.io/client-go/tools/cache"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/windlass-dev/windlass/internal/reconcile"
	"github.com/windlass-dev/windlass/internal/shard"
)

// sweepHandedOver removes from this replica's storage the artifacts of the
// sources it handed over (or lost) to another replica, once the new holder
// published its own: until then, consumers still download them from here.
// Every replica caches the sources whole, so it sees that moment.
func (s artifactStore) sweepHandedOver(ctx context.Context, informers cache.Informers, obj client.Object, sharder reconcile.Sharder) error {
	informer, err := informers.GetInformer(ctx, obj)
	if err != nil {
		return fmt.Errorf("watching %s for the artifacts handed over: %w", s.kind, err)
	}
	mine := sharder.Mine()
	_, err = informer.AddEventHandler(toolscache.ResourceEventHandlerFuncs{UpdateFunc: func(_, newObj any) {
		if src, ok := newObj.(sourceObject); ok && s.handedOver(src, mine.Generic(event.GenericEvent{Object: src})) {
			s.sweep(ctx, src)
		}
	}})
	return err
}

// handedOver tells whether src is held by another replica (held says
// whether this one holds it) and its artifact is no longer served from
// this replica's storage.
func (s artifactStore) handedOver(src sourceObject, held bool) bool {
	a := src.GetArtifact()
	if held || src.GetLabels()[shard.HolderLabel] == "" || a == nil {
		return false
	}
	return a.URL != s.storage.NewArtifactFor(s.kind, src, a.Revision, a.FileName()).URL
}

// sweep removes src's folder of storage, when this replica has one.
func (s artifactStore) sweep(ctx context.Context, src sourceObject) {
	dir := s.storage.NewArtifactFor(s.kind, src, "", "*")
	if _, err := os.Lstat(filepath.Dir(s.storage.LocalPath(dir))); err != nil {
		return
	}
	log := ctrl.LoggerFrom(ctx).WithValues(s.kind, client.ObjectKeyFromObject(src))
	removed, err := s.storage.RemoveAll(dir)
	if err != nil {
		log.Error(err, "Removing the artifacts of a source another replica holds")
		return
	}
	s.storage.ForgetTrees(s.kind, src.GetNamespace(), src.GetName())
	log.V(1).Info("Removed the artifacts of a source another replica holds", "path", removed)
}
