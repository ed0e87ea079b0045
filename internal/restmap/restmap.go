// Package restmap keeps the REST mappings a mapper has answered, so that a
// kind asked about again is answered from a map. controller-runtime's
// dynamic mapper answers each question by walking a mapper per API group,
// and every client request asks one (a controller asks thousands a second
// at scale); discovery itself stays the wrapped mapper's business.
package restmap

import (
	"net/http"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

// maxMappings bounds the mappings kept: past it, the map starts again
// empty. Only mappings the wrapped mapper found are kept, so the kinds
// that exist bound them already; the bound holds whatever they are.
const maxMappings = 4096

// Mapper is a meta.RESTMapper that keeps the RESTMapping answers of the
// mapper it wraps. Errors are not kept: a kind that is missing is asked
// about again, so that the wrapped mapper can discover it once it exists.
// A kept mapping is as current as the wrapped mapper's was when it gave
// it (controller-runtime's does not look again at a group it knows either);
// Reset forgets them all.
type Mapper struct {
	meta.RESTMapper

	mu       sync.RWMutex
	mappings map[mappingKey]meta.RESTMapping
}

type mappingKey struct {
	kind     schema.GroupKind
	versions string
}

var _ meta.ResettableRESTMapper = (*Mapper)(nil)

// New returns a Mapper that keeps the mappings of inner.
func New(inner meta.RESTMapper) *Mapper {
	return &Mapper{RESTMapper: inner, mappings: map[mappingKey]meta.RESTMapping{}}
}

// NewDynamic returns a Mapper over controller-runtime's dynamic mapper of
// the cluster of cfg: a manager's MapperProvider.
func NewDynamic(cfg *rest.Config, httpClient *http.Client) (meta.RESTMapper, error) {
	inner, err := apiutil.NewDynamicRESTMapper(cfg, httpClient)
	if err != nil {
		return nil, err
	}
	return New(inner), nil
}

// RESTMapping returns the mapping of kind gk at the first of versions the
// API serves (its preferred version when none is given), from the kept
// mappings when the same question was answered before. The mapping
// returned is the caller's own.
func (m *Mapper) RESTMapping(gk schema.GroupKind, versions ...string) (*meta.RESTMapping, error) {
	key := mappingKey{kind: gk, versions: strings.Join(versions, "\x00")}
	m.mu.RLock()
	kept, ok := m.mappings[key]
	m.mu.RUnlock()
	if ok {
		return &kept, nil
	}
	found, err := m.RESTMapper.RESTMapping(gk, versions...)
	if err != nil {
		return nil, err
	}
	m.mu.Lock()
	if len(m.mappings) >= maxMappings {
		clear(m.mappings)
	}
	m.mappings[key] = *found
	m.mu.Unlock()
	return found, nil
}

// Reset forgets the kept mappings, and resets the wrapped mapper when it
// can be.
func (m *Mapper) Reset() {
	m.mu.Lock()
	clear(m.mappings)
	m.mu.Unlock()
	if r, ok := m.RESTMapper.(meta.ResettableRESTMapper); ok {
		r.Reset()
	}
}
