package manager

import (
	"context"
	"net/http"
	"path"
	"strings"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/windlass-dev/windlass/api/meta"
	sourcev1 "github.com/windlass-dev/windlass/api/source/v1"
	sourceextv1beta1 "github.com/windlass-dev/windlass/api/sourceextensions/v1beta1"
	"github.com/windlass-dev/windlass/internal/artifact"
	"github.com/windlass-dev/windlass/internal/fetch"
	"github.com/windlass-dev/windlass/internal/kinds"
	"github.com/windlass-dev/windlass/internal/predicates"
	"github.com/windlass-dev/windlass/internal/shard"
)

// artifactsAddress names the address of a replica's artifact server on
// its Lease.
const artifactsAddress = "artifacts"

// sharedArtifacts tells whether the replicas share one artifact address:
// --shards=auto, with a --storage-adv-addr (a Service in front of the
// replicas) other than this replica's own server's. Every replica then
// names an artifact with the same URL, and a takeover changes no source's
// status.
func sharedArtifacts(opts Options) bool {
	if !opts.Shards.auto() || opts.Source.StorageAdvAddr == "" {
		return false
	}
	own, ok := replicaAddress(opts.Source.StorageAddr)
	return ok && own != opts.Source.StorageAdvAddr
}

// chartSourceArtifacts returns the HTTP fetcher of the artifacts that
// another replica stores, for the HelmCharts built from them, when the
// replicas share the sources; nil otherwise.
func (m *Manager) chartSourceArtifacts(opts Options) *fetch.HTTP {
	if !opts.Shards.auto() {
		return nil
	}
	return m.remoteArtifacts()
}

// artifactSource reads and unpacks artifacts: a Fetcher, a Patcher and a
// Reader.
type artifactSource interface {
	fetch.Fetcher
	fetch.Reader
}

// artifacts returns how the appliers of this process read the artifacts
// of their sources: from the storage of the source controller of this
// process when it holds them, over HTTP otherwise (the source controller
// runs elsewhere, another replica holds the source, or another producer
// publishes the ExternalArtifact).
func (m *Manager) artifacts() artifactSource {
	if m.Storage == nil {
		return fetch.NewHTTP()
	}
	return &fetch.LocalOrHTTP{Local: &fetch.Local{Storage: m.Storage}, HTTP: m.remoteArtifacts()}
}

// remoteArtifacts returns the HTTP fetcher of the artifacts that this
// process does not store: from the replica that holds their source when
// the replicas share one address (see artifactRoute).
func (m *Manager) remoteArtifacts() *fetch.HTTP {
	h := fetch.NewHTTP()
	if m.Storage != nil && m.Storage.Shared() {
		h.Route = m.artifactRoute
	}
	return h
}

// storedAgainHere tells the appliers of this process whether the
// artifact a of source, of kind, is being stored again here (see
// sourceref.Resolver.StoredAgainHere): see willStoreAgain. An applier
// asks so when it needs a's content: a that the source controller defers
// until asked (see artifact.Storage.Defer) is asked for, also before the
// source's run deferred it (artifact.Storage.AskToStore).
func (m *Manager) storedAgainHere(kind string, source client.Object, a meta.Artifact) bool {
	var owns func(string, metav1.Object) bool
	if m.Shard != nil {
		owns = m.Shard.Owns
	}
	if !willStoreAgain(m.Storage, owns, kind, source, a) {
		return false
	}
	m.Storage.AskToStore(kind, source, a)
	return true
}

// willStoreAgain reports whether the source controller of this process,
// whose artifacts storage holds, is about to store a, the artifact of
// source, of kind, again under its own address: it reconciles the kind
// (ExternalArtifacts have producers of their own), the source is not
// suspended, owns (nil without shards) gives it to this replica, and a was
// stored by another replica, or at another address (before the storage's
// address changed), and is not in storage (see
// artifact.Storage.StoredElsewhere). The source's next status names this
// storage's address, or, when the replicas share theirs, the status stays
// and the storage tells the consumers (artifact.Storage.OnStoredAgain).
func willStoreAgain(storage *artifact.Storage, owns func(string, metav1.Object) bool, kind string, source client.Object, a meta.Artifact) bool {
	if storage == nil {
		return false
	}
	if row, ok := kinds.Named(kind); !ok || !row.Reconciled() {
		return false
	}
	if s, ok := source.(interface{ IsSuspended() bool }); ok && s.IsSuspended() {
		return false
	}
	if owns != nil && !owns(kind, source) {
		return false
	}
	return storage.StoredElsewhere(kind, source, a)
}

// artifactRoute returns the URL from which a consumer of this process
// downloads a, an artifact its storage lacks, when the replicas share one
// address: the replica that holds its source, at the address its Lease
// publishes; "" when this replica holds it (its source controller stores
// it again: see willStoreAgain); a's URL when no holder is known.
func (m *Manager) artifactRoute(ctx context.Context, a meta.Artifact) string {
	holder := m.artifactHolder(ctx, a.Path)
	switch {
	case holder == "":
		return a.URL
	case holder == m.Shard.Name():
		return ""
	}
	base := m.Shard.AddressOf(holder, artifactsAddress)
	if base == "" {
		return a.URL
	}
	return strings.TrimSuffix(base, "/") + "/" + a.Path
}

// forwardArtifacts passes a request for an artifact that this replica's
// storage lacks to the replica that holds its source, when the replicas
// share one address: a Service sends a download to any of them.
func (m *Manager) forwardArtifacts(storage http.Handler) http.Handler {
	return shard.Forward(storage, func(r *http.Request) string {
		if m.Shard == nil || !m.Storage.Shared() {
			return ""
		}
		p := strings.TrimPrefix(r.URL.Path, "/")
		if m.Storage.ArtifactExists(meta.Artifact{Path: p}) {
			return ""
		}
		holder := m.artifactHolder(r.Context(), p)
		if holder == "" || holder == m.Shard.Name() {
			return ""
		}
		return m.Shard.AddressOf(holder, artifactsAddress)
	})
}

// artifactHolder returns the replica that holds the source whose artifact
// is at p, a path in storage (<kind>/<namespace>/<name>/<file>): the
// holder of the ArtifactGenerator that publishes an ExternalArtifact; ""
// when it is not known.
func (m *Manager) artifactHolder(ctx context.Context, p string) string {
	parts := strings.Split(path.Clean(p), "/")
	if m.Shard == nil || len(parts) != 4 {
		return ""
	}
	row, ok := kindOfFolder(parts[0])
	if !ok {
		return ""
	}
	obj := row.New()
	if err := m.GetClient().Get(ctx, types.NamespacedName{Namespace: parts[1], Name: parts[2]}, obj); err != nil {
		return ""
	}
	if ea, ok := obj.(*sourcev1.ExternalArtifact); ok {
		return m.generatorHolder(ctx, ea)
	}
	return m.Shard.HolderOf(obj)
}

// generatorHolder returns the replica that holds the ArtifactGenerator
// that owns ea, "" when none does.
func (m *Manager) generatorHolder(ctx context.Context, ea *sourcev1.ExternalArtifact) string {
	for _, owner := range ea.OwnerReferences {
		if owner.Kind != sourceextv1beta1.ArtifactGeneratorKind {
			continue
		}
		var gen sourceextv1beta1.ArtifactGenerator
		if err := m.GetClient().Get(ctx, types.NamespacedName{Namespace: ea.Namespace, Name: owner.Name}, &gen); err == nil {
			return m.Shard.HolderOf(&gen)
		}
	}
	return ""
}

// kindOfFolder returns the kind whose artifacts are stored in folder (see
// artifact.Storage.NewArtifactFor: the kind's name in lower case): a kind
// whose objects carry an artifact, which every replica caches whole (so
// that a request names no object the cache would start watching).
func kindOfFolder(folder string) (kinds.Kind, bool) {
	for _, row := range kinds.All {
		if strings.ToLower(row.Kind) != folder || row.CachedByHolder {
			continue
		}
		if _, ok := row.New().(predicates.ArtifactSource); ok {
			return row, true
		}
	}
	return kinds.Kind{}, false
}

// storedAgainEvents passes the artifacts that the source controllers of
// this process built again, as another replica had stored them (see
// artifact.Storage.OnStoredAgain), to the controllers of their consumers.
type storedAgainEvents struct {
	mu   sync.Mutex
	subs map[string][]chan event.GenericEvent
}

// storedAgainBuffer is how many events a consumer's controller may have
// yet to take: beyond, an event is dropped, and the consumer that waited
// runs at its requeue (--requeue-dependency) instead.
const storedAgainBuffer = 1024

// subscribe returns the events of the sources of kind.
func (e *storedAgainEvents) subscribe(kind string) <-chan event.GenericEvent {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.subs == nil {
		e.subs = map[string][]chan event.GenericEvent{}
	}
	ch := make(chan event.GenericEvent, storedAgainBuffer)
	e.subs[kind] = append(e.subs[kind], ch)
	return ch
}

// tell passes that the artifact of obj, of kind, was built again here.
func (e *storedAgainEvents) tell(kind string, obj metav1.Object) {
	source := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: obj.GetNamespace(), Name: obj.GetName()}}
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, ch := range e.subs[kind] {
		select {
		case ch <- event.GenericEvent{Object: source}:
		default:
		}
	}
}
