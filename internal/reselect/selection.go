// Package reselect lets a controller-runtime cache hold, for some kinds, only
// the objects whose labels match a selector that changes over time, such as
// the buckets a replica holds.
//
// A Selection is a static selector AND'ed with "key in (values...)". Its
// NewInformer hook (for cache.Options.NewInformer) wraps the ListerWatcher of
// the chosen kinds so that every List and Watch asks the API server for the
// Selection's current value. When Set changes the values, every watch opened
// through the Selection ends; the reflector watches again from where it
// was, and that watch first sends the objects of the values removed as
// deleted and those of the values added as added, listed at that version,
// which the informer's event handlers see as deletes and adds. The objects
// of the values kept are not listed again, and the reflector does not back
// off. (Should the API server no longer keep that version, the reflector
// lists everything again with the new selector.)
//
// Do not configure a label selector for these kinds in the cache options
// (ByObject or DefaultLabelSelector): controller-runtime applies it inside
// the ListerWatcher it hands to the hook, below the wrapper, where it
// replaces the Selection's selector altogether. Pass the static part (such
// as --watch-label-selector) to New instead.
package reselect

import (
	"reflect"
	"slices"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/selection"
	toolscache "k8s.io/client-go/tools/cache"
)

// Selection is a label selector that can change; informers made by its
// NewInformer hook list and watch with its current value and start again
// (relist) when it changes. It is safe for concurrent use.
type Selection struct {
	// static are the requirements that always apply; nothing means the
	// static selector selects no object.
	static  labels.Requirements
	nothing bool
	key     string

	mu       sync.Mutex
	values   []string        // sorted, without duplicates
	selector labels.Selector // static AND key in (values)
	gen      uint64          // counts the changes of selector
	watches  map[*proxyWatch]struct{}
}

// New returns a Selection whose value is static (nil for none) AND'ed with
// "key in (values...)". An empty set of values selects no object. It fails
// when key is not a valid label key or a value not a valid label value.
func New(static labels.Selector, key string, values []string) (*Selection, error) {
	if _, err := labels.NewRequirement(key, selection.Exists, nil); err != nil {
		return nil, err
	}
	s := &Selection{key: key, watches: map[*proxyWatch]struct{}{}}
	if static != nil {
		var selectable bool
		s.static, selectable = static.Requirements()
		s.nothing = !selectable
	}
	s.values = normalize(values)
	var err error
	if s.selector, err = s.build(s.values); err != nil {
		return nil, err
	}
	return s, nil
}

// Set changes the set of values. When the set differs from the current one
// (order and duplicates do not matter), every watch opened through the
// Selection ends, without an error: its informer watches again at once
// from where it was, and that watch first sends the objects of the values
// removed as deleted and those of the values added as added (see
// listerWatcher.WatchWithContext). Nothing is listed again but those, and
// no backoff delays them. It fails, changing nothing, when a value is not
// a valid label value.
//
// When the watch cannot do so (the API server no longer keeps the version
// it resumes from), the informer lists everything again after the
// reflector's backoff (client-go's default, which the informer does not
// let one change): 0.8-1.6 s after a first failure, twice as long after
// each further one until two minutes have passed, up to 30-60 s.
func (s *Selection) Set(values []string) error {
	values = normalize(values)
	s.mu.Lock()
	defer s.mu.Unlock()
	if slices.Equal(values, s.values) {
		return nil
	}
	selector, err := s.build(values)
	if err != nil {
		return err
	}
	s.values, s.selector = values, selector
	s.gen++
	for w := range s.watches {
		w.end()
	}
	clear(s.watches)
	return nil
}

// Values returns the current set of values, sorted.
func (s *Selection) Values() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.values)
}

// Selector returns the current full selector.
func (s *Selection) Selector() labels.Selector {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.selector
}

// current returns the current selector and its generation.
func (s *Selection) current() (labels.Selector, uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.selector, s.gen
}

// build returns the selector of values. A selector that matches nothing
// still has to be sent to the API server as one that selects nothing:
// "key,!key" (the key exists and does not).
func (s *Selection) build(values []string) (labels.Selector, error) {
	if len(values) == 0 || s.nothing {
		exists, _ := labels.NewRequirement(s.key, selection.Exists, nil)
		absent, _ := labels.NewRequirement(s.key, selection.DoesNotExist, nil)
		return labels.NewSelector().Add(*exists, *absent), nil
	}
	in, err := labels.NewRequirement(s.key, selection.In, slices.Clone(values))
	if err != nil {
		return nil, err
	}
	return labels.NewSelector().Add(s.static...).Add(*in), nil
}

// without returns the values of the sorted set a that the sorted set b
// does not hold.
func without(a, b []string) []string {
	var out []string
	for _, v := range a {
		if _, found := slices.BinarySearch(b, v); !found {
			out = append(out, v)
		}
	}
	return out
}

// normalize returns a sorted copy of values without duplicates.
func normalize(values []string) []string {
	out := slices.Clone(values)
	slices.Sort(out)
	return slices.Compact(out)
}

// For returns, for NewInformer, a function that answers s for the objects of
// the same Go type as one of examples (such as &corev1.ConfigMap{}) and nil
// for the others. Unstructured and metadata-only objects share one Go type
// whatever their kind: write a function that looks at their kind instead.
func (s *Selection) For(examples ...runtime.Object) func(runtime.Object) *Selection {
	types := map[reflect.Type]bool{}
	for _, e := range examples {
		types[reflect.TypeOf(e)] = true
	}
	return func(obj runtime.Object) *Selection {
		if types[reflect.TypeOf(obj)] {
			return s
		}
		return nil
	}
}

// NewInformer returns a hook for cache.Options.NewInformer. For the objects
// to which selectionOf answers a Selection, it wraps the ListerWatcher with
// that Selection (see Wrap); for the others (nil), it makes the informer
// controller-runtime makes by default.
func NewInformer(selectionOf func(runtime.Object) *Selection) func(toolscache.ListerWatcher, runtime.Object, time.Duration, toolscache.Indexers) toolscache.SharedIndexInformer {
	return func(lw toolscache.ListerWatcher, obj runtime.Object, resync time.Duration, indexers toolscache.Indexers) toolscache.SharedIndexInformer {
		if s := selectionOf(obj); s != nil {
			lw = s.Wrap(lw)
		}
		return toolscache.NewSharedIndexInformer(lw, obj, resync, indexers)
	}
}
