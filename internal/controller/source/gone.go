package source

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Sources carry no finalizer (see kinds.Kind.Finalized): what a deleted
// source leaves is this process's own, its artifacts in storage, which go
// when the runner finds the source gone (removeGone), and, for a source
// deleted while no controller ran, when the controller starts again
// (goneSweep).

// removeGone removes the artifacts of the source key, which is gone.
func (s artifactStore) removeGone(ctx context.Context, key types.NamespacedName) {
	dir := s.storage.NewArtifactFor(s.kind, &metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}, "", "*")
	log := ctrl.LoggerFrom(ctx).WithValues(s.kind, key)
	removed, err := s.storage.RemoveAll(dir)
	if err != nil {
		log.Error(err, "Removing the artifacts of a deleted source")
		return
	}
	if removed != "" {
		log.V(1).Info("Removed the artifacts of a deleted source", "path", removed)
	}
}

// goneSweep is the Runnable that, once the caches have synced, removes from
// storage the folders of the sources of its kind that no longer exist.
type goneSweep struct {
	store  artifactStore
	cache  cache.Cache
	newObj func() client.Object
}

// NeedLeaderElection is false: every replica sweeps its own storage.
func (g *goneSweep) NeedLeaderElection() bool { return false }

// Start sweeps once, after the caches have synced.
func (g *goneSweep) Start(ctx context.Context) error {
	if !g.cache.WaitForCacheSync(ctx) {
		return nil
	}
	log := ctrl.LoggerFrom(ctx).WithName("storage")
	removed, err := g.sweep(ctx, g.cache)
	if err != nil {
		log.Error(err, "Sweeping the artifacts of deleted sources", "kind", g.store.kind)
	}
	if len(removed) > 0 {
		log.Info("Removed the artifacts of sources deleted while the controller was away", "kind", g.store.kind, "sources", removed)
	}
	return nil
}

// sweep removes the folders <kind>/<namespace>/<name> of storage whose
// source sources does not hold, and returns their keys.
func (g *goneSweep) sweep(ctx context.Context, sources client.Reader) ([]string, error) {
	root := filepath.Join(g.store.storage.BasePath(), strings.ToLower(g.store.kind))
	namespaces, err := os.ReadDir(root)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var removed []string
	var errs []error
	for _, ns := range namespaces {
		if !ns.IsDir() {
			continue
		}
		names, err := os.ReadDir(filepath.Join(root, ns.Name()))
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, name := range names {
			key := types.NamespacedName{Namespace: ns.Name(), Name: name.Name()}
			if !name.IsDir() || strings.HasPrefix(name.Name(), ".") {
				continue
			}
			err := sources.Get(ctx, key, g.newObj())
			if err == nil {
				continue
			}
			if !apierrors.IsNotFound(err) {
				errs = append(errs, err)
				continue
			}
			g.store.removeGone(ctx, key)
			removed = append(removed, key.String())
		}
	}
	return removed, errors.Join(errs...)
}
