// Package sourceref finds the source an object names in its sourceRef (a
// Kustomization's, a HelmRelease's chartRef): the source kinds that can be
// referenced (from internal/kinds), the cross-namespace lockdown, and the
// outcome a reconciler reports for each case. A controller also watches
// every kind that its references may name.
package sourceref

import (
	"context"
	"fmt"
	"maps"
	"path"
	"slices"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/windlass-dev/windlass/api/meta"
	"github.com/windlass-dev/windlass/internal/conditions"
	"github.com/windlass-dev/windlass/internal/kinds"
	"github.com/windlass-dev/windlass/internal/predicates"
	"github.com/windlass-dev/windlass/internal/reconcile/outcome"
)

// Source is an object that publishes an artifact.
type Source interface {
	client.Object
	predicates.ArtifactSource
}

// Ref names a source. An empty Namespace means the referrer's.
type Ref struct {
	Kind, Name, Namespace string
}

// Kinds maps each source kind that can be referenced to a constructor of
// an empty object of it.
type Kinds map[string]func() Source

// Served returns the source kinds a Kustomization may name.
func Served() Kinds {
	return For(kinds.KustomizationSource)
}

// For returns the source kinds that references of use may name, from the
// registry of kinds.
func For(use kinds.Use) Kinds {
	out := Kinds{}
	for _, k := range kinds.SourcesFor(use) {
		out[k.Kind] = func() Source { return k.New().(Source) }
	}
	return out
}

// Check stalls (reason UnsupportedSourceKind) when kind is not one of ks:
// a kind the schema accepts but Windlass does not serve, such as
// ExternalArtifact. It reads nothing, so a reconciler can run it first.
func (ks Kinds) Check(kind string) error {
	if _, ok := ks[kind]; ok {
		return nil
	}
	return outcome.Stall(meta.UnsupportedSourceKindReason,
		fmt.Errorf("source kind '%s' is not served by Windlass (served: %s)", kind, strings.Join(ks.Names(), ", ")))
}

// Names returns the kinds of ks, sorted.
func (ks Kinds) Names() []string {
	return slices.Sorted(maps.Keys(ks))
}

// Namespace returns the namespace of ref, as seen from an object in
// namespace.
func Namespace(namespace string, ref Ref) string {
	if ref.Namespace != "" {
		return ref.Namespace
	}
	return namespace
}

// Key returns the "<kind>/<namespace>/<name>" key of ref seen from
// namespace, which indexes the referrers of a source.
func Key(namespace string, ref Ref) string {
	return fmt.Sprintf("%s/%s/%s", ref.Kind, Namespace(namespace, ref), ref.Name)
}

// KeyOf returns the key of source, an object of kind.
func KeyOf(kind string, source client.Object) string {
	return fmt.Sprintf("%s/%s/%s", kind, source.GetNamespace(), source.GetName())
}

// Resolver gets referenced sources.
type Resolver struct {
	// Client reads the sources, usually from the shared cache.
	Client client.Reader
	// Kinds are the kinds that can be referenced.
	Kinds Kinds
	// NoCrossNamespaceRefs refuses references to other namespaces.
	NoCrossNamespaceRefs bool
	// Requeue is how long to wait for a source that is missing or has no
	// artifact yet.
	Requeue time.Duration
	// StoredAgainHere, when set, reports whether the artifact a of source,
	// of kind, was stored at another address (by a replica that went, say)
	// and the source controller of this process is storing it again
	// under its own: a consumer then waits for it, keeping its status
	// (the artifact's new address wakes it), rather than download it from
	// an address that may be gone.
	StoredAgainHere func(kind string, source client.Object, a meta.Artifact) bool
}

// Get returns the source that an object of namespace references with ref.
// A kind this build does not serve, or a refused cross-namespace
// reference, stalls; a source that does not exist or has no artifact yet
// is waited for. The path of an artifact outside the source's own folder
// of storage is cleared (see OwnFolder).
func (r *Resolver) Get(ctx context.Context, namespace string, ref Ref) (Source, error) {
	key := types.NamespacedName{Namespace: Namespace(namespace, ref), Name: ref.Name}
	if r.NoCrossNamespaceRefs && key.Namespace != namespace {
		return nil, outcome.Stall(meta.AccessDeniedReason,
			fmt.Errorf("cross-namespace reference to %s '%s' is not allowed", ref.Kind, key))
	}
	if err := r.Kinds.Check(ref.Kind); err != nil {
		return nil, err
	}
	source := r.Kinds[ref.Kind]()
	if err := r.Client.Get(ctx, key, source); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, outcome.Wait(meta.ArtifactFailedReason, fmt.Errorf("source %s '%s' not found", ref.Kind, key), r.Requeue)
		}
		return nil, err
	}
	a := source.GetArtifact()
	if a == nil {
		err := fmt.Errorf("source %s '%s' has no artifact yet", ref.Kind, key)
		if fetchingFirst(source) {
			return nil, outcome.WaitQuietly(meta.ArtifactFailedReason, err, r.Requeue)
		}
		return nil, outcome.Wait(meta.ArtifactFailedReason, err, r.Requeue)
	}
	if !OwnFolder(ref.Kind, source, a.Path) {
		a.Path = ""
	} else if r.StoredAgainHere != nil && r.StoredAgainHere(ref.Kind, source, *a) {
		return nil, WaitStoredAgain(ref.Kind, source, r.Requeue)
	}
	return source, nil
}

// WaitStoredAgain returns the wait of a consumer for the artifact of
// source, of kind, that another replica stored and that the source
// controller of this process is storing again: the consumer keeps its
// status, and the artifact, once stored, wakes it (or requeue passes).
func WaitStoredAgain(kind string, source client.Object, requeue time.Duration) error {
	return outcome.WaitKeepingStatus(meta.ArtifactFailedReason,
		fmt.Errorf("the artifact of source %s '%s' was stored by another replica and is being stored again here",
			kind, client.ObjectKeyFromObject(source)), requeue)
}

// fetchingFirst tells whether source, which has no artifact, is under way
// to its first: not suspended, and either never reconciled yet or
// progressing (not retrying after a failure).
func fetchingFirst(source Source) bool {
	if s, ok := source.(interface{ IsSuspended() bool }); ok && s.IsSuspended() {
		return false
	}
	c, ok := source.(conditions.Getter)
	if !ok {
		return false
	}
	return !conditions.Has(c, meta.ReadyCondition) || conditions.InProgress(c)
}

// OwnFolder reports whether p, an artifact's path in storage, lies in the
// folder of source, an object of kind (<kind>/<namespace>/<name>/<file>):
// so do the artifacts of every kind Windlass stores. An artifact elsewhere
// (an ExternalArtifact that another producer published) is read from its
// URL only, never from this storage: Get clears its path, so that its
// status cannot make a consumer read another object's artifact.
func OwnFolder(kind string, source client.Object, p string) bool {
	dir, file := path.Split(p)
	return file != "" && dir == strings.ToLower(kind)+"/"+source.GetNamespace()+"/"+source.GetName()+"/"
}
