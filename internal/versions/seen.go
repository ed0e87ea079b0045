package versions

import (
	"maps"
	"sync"

	"k8s.io/apimachinery/pkg/types"
)

// Seen remembers, per owner (a Kustomization, a HelmRelease), the version
// (a resourceVersion, or a fields version: see FieldsDigest) at which each
// of its objects was last seen in some state (healthy, in sync), and
// against what basis the state was judged: an object still at that
// version, judged against the same basis, is still in that state, and need
// not be read again. It is safe for concurrent use, and what Known returns
// is never changed afterwards.
type Seen[K comparable] struct {
	mu      sync.Mutex
	byOwner map[types.NamespacedName]seenState[K]
}

type seenState[K comparable] struct {
	basis    string
	versions map[K]string
}

// Known returns the versions remembered of owner's objects against basis;
// none when they were judged against another.
func (s *Seen[K]) Known(owner types.NamespacedName, basis string) map[K]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	known, ok := s.byOwner[owner]
	if !ok || known.basis != basis {
		return nil
	}
	return known.versions
}

// Record remembers the versions of seen for owner against basis, and
// forgets lost (objects no longer in the state); the other objects keep
// what was remembered of them against the same basis.
func (s *Seen[K]) Record(owner types.NamespacedName, basis string, seen map[K]string, lost []K) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.byOwner == nil {
		s.byOwner = map[types.NamespacedName]seenState[K]{}
	}
	// A new map each time: a map that Known returned is never changed.
	versions := map[K]string{}
	if known := s.byOwner[owner]; known.basis == basis {
		maps.Copy(versions, known.versions)
	}
	maps.Copy(versions, seen)
	for _, k := range lost {
		delete(versions, k)
	}
	s.byOwner[owner] = seenState[K]{basis: basis, versions: versions}
}

// Forget drops what is remembered of owner.
func (s *Seen[K]) Forget(owner types.NamespacedName) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.byOwner, owner)
}
