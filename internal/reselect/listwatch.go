package reselect

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/watchlist"
	"k8s.io/utils/ptr"
)

// expiredMessage is the message of the 410 Expired errors that end what
// was started with an older selector.
const expiredMessage = "the selection changed"

// expired returns the error that ends what was started with an older
// selector: a 410 Expired makes a reflector list again.
func expired() *apierrors.StatusError {
	return apierrors.NewResourceExpired(expiredMessage)
}

// listerWatcher lists and watches through inner with the current selector
// of s.
type listerWatcher struct {
	s                    *Selection
	inner                toolscache.ListerWatcherWithContext
	unsupportedWatchList bool
	// listedGen is the generation of the selector of the state that a
	// paginated List continues and a Watch from a resource version
	// resumes: that of the last List or Watch that sent the initial state,
	// or of the last Watch that sent the objects of the values added and
	// removed since; listedValues are its values. Guarded by s.mu.
	listedGen    uint64
	listedValues []string
}

var (
	_ toolscache.ListerWatcher            = &listerWatcher{}
	_ toolscache.ListerWatcherWithContext = &listerWatcher{}
)

// Wrap returns a ListerWatcher whose List and Watch ask for the objects
// matching the current selector, AND'ed with any label selector already in
// their options, and keep the other options. It also implements
// ListerWatcherWithContext, and supports WatchList semantics as lw does.
//
// The watches it opens end, without an error, when the selector changes.
// A Watch that then resumes from a resource version first sends the
// objects of the values removed and added since, as they were at that
// version (Deleted and Added events, then a Bookmark of that version),
// then the changes since of every object the selector selects: the
// reflector lists nothing again, and does not back off. A List that
// continues a paginated one fails with a 410 Expired error when the
// selector changed since its first page; so does a Watch whose selector
// changes while it opens, or whose lists fail. A reflector then lists
// again from the start.
func (s *Selection) Wrap(lw toolscache.ListerWatcher) toolscache.ListerWatcher {
	return &listerWatcher{
		s:                    s,
		inner:                toolscache.ToListerWatcherWithContext(lw),
		unsupportedWatchList: watchlist.DoesClientNotSupportWatchListSemantics(lw),
	}
}

// List lists with the current selector.
func (l *listerWatcher) List(opts metav1.ListOptions) (runtime.Object, error) {
	return l.ListWithContext(context.Background(), opts)
}

// Watch watches with the current selector.
func (l *listerWatcher) Watch(opts metav1.ListOptions) (watch.Interface, error) {
	return l.WatchWithContext(context.Background(), opts)
}

// IsWatchListSemanticsUnSupported tells whether the wrapped ListerWatcher
// does not support WatchList semantics.
func (l *listerWatcher) IsWatchListSemanticsUnSupported() bool {
	return l.unsupportedWatchList
}

// ListWithContext lists with the current selector.
func (l *listerWatcher) ListWithContext(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
	selector, err := l.beginList(opts.Continue != "")
	if err != nil {
		return nil, err
	}
	opts.LabelSelector = and(opts.LabelSelector, selector)
	return l.inner.ListWithContext(ctx, opts)
}

// WatchWithContext watches with the current selector until it changes.
// A Watch that resumes from a resource version after values were added or
// removed since the state it resumes was listed first sends the changes
// of the objects of those values (see changedSince).
func (l *listerWatcher) WatchWithContext(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	plan, err := l.beginWatch(ptr.Deref(opts.SendInitialEvents, false))
	if err != nil {
		return nil, err
	}
	var preamble []watch.Event
	if len(plan.added)+len(plan.removed) > 0 {
		if preamble, err = l.changedSince(ctx, opts, plan.added, plan.removed); err != nil {
			return nil, err
		}
	}
	opts.LabelSelector = and(opts.LabelSelector, plan.selector)
	w, err := l.inner.WatchWithContext(ctx, opts)
	if err != nil {
		return nil, err
	}
	return l.s.track(w, plan.gen, preamble, func() { l.listedGen, l.listedValues = plan.gen, plan.values })
}

// changedSince returns what a Watch with opts, which resumes from a
// resource version, sends first: the objects of the values removed as
// Deleted events and those of the values added as Added events, as they
// were at that version, then a Bookmark of that version. Lists of exactly
// that version give them, which the API server serves from its watch
// cache or its storage while they keep it. Any error is a 410 Expired:
// the reflector then lists anew.
func (l *listerWatcher) changedSince(ctx context.Context, opts metav1.ListOptions, added, removed []string) ([]watch.Event, error) {
	var out []watch.Event
	for _, part := range []struct {
		values []string
		typ    watch.EventType
	}{{removed, watch.Deleted}, {added, watch.Added}} {
		if len(part.values) == 0 {
			continue
		}
		items, err := l.listExactly(ctx, opts, part.values)
		if err != nil {
			return nil, expired()
		}
		for _, item := range items {
			out = append(out, watch.Event{Type: part.typ, Object: item})
		}
	}
	if len(out) == 0 {
		return nil, nil
	}
	// The events carry older versions than the one resumed from: the
	// Bookmark gives the reflector that version back.
	bookmark := out[len(out)-1].Object.DeepCopyObject()
	if m, err := apimeta.Accessor(bookmark); err == nil {
		m.SetResourceVersion(opts.ResourceVersion)
	}
	return append(out, watch.Event{Type: watch.Bookmark, Object: bookmark}), nil
}

// listExactly lists the objects of values as they were at the resource
// version of opts.
func (l *listerWatcher) listExactly(ctx context.Context, opts metav1.ListOptions, values []string) ([]runtime.Object, error) {
	selector, err := l.s.build(values)
	if err != nil {
		return nil, err
	}
	list, err := l.inner.ListWithContext(ctx, metav1.ListOptions{
		LabelSelector:        and(opts.LabelSelector, selector.String()),
		ResourceVersion:      opts.ResourceVersion,
		ResourceVersionMatch: metav1.ResourceVersionMatchExact,
	})
	if err != nil {
		return nil, err
	}
	return apimeta.ExtractList(list)
}

// beginList returns the selector of a List, which continues a paginated
// one when continuing.
func (l *listerWatcher) beginList(continuing bool) (string, error) {
	l.s.mu.Lock()
	defer l.s.mu.Unlock()
	if continuing && l.listedGen != l.s.gen {
		return "", expired()
	}
	l.listedGen, l.listedValues = l.s.gen, l.s.values
	return l.s.selector.String(), nil
}

// watchPlan is what a Watch asks for: the current selector, its generation
// and values, and the values added and removed since the state it resumes
// was listed.
type watchPlan struct {
	selector       string
	gen            uint64
	values         []string
	added, removed []string
}

// beginWatch returns the plan of a Watch, which sends the initial state
// when initial.
func (l *listerWatcher) beginWatch(initial bool) (watchPlan, error) {
	l.s.mu.Lock()
	defer l.s.mu.Unlock()
	plan := watchPlan{selector: l.s.selector.String(), gen: l.s.gen, values: l.s.values}
	switch {
	case initial:
		l.listedGen, l.listedValues = l.s.gen, l.s.values
	case l.listedGen != l.s.gen:
		plan.added, plan.removed = without(l.s.values, l.listedValues), without(l.listedValues, l.s.values)
	}
	return plan, nil
}

// track returns a watch that sends preamble, then forwards the events of
// inner, opened with the selector of generation gen, until the selector
// changes; opened runs, under the lock, once it is tracked. It fails when
// the selector has changed already.
func (s *Selection) track(inner watch.Interface, gen uint64, preamble []watch.Event, opened func()) (watch.Interface, error) {
	s.mu.Lock()
	if gen != s.gen {
		s.mu.Unlock()
		inner.Stop()
		return nil, expired()
	}
	opened()
	p := newProxyWatch(inner, preamble)
	p.done = func() { s.untrack(p) }
	s.watches[p] = struct{}{}
	s.mu.Unlock()
	go p.run()
	return p, nil
}

// untrack forgets a watch that has ended.
func (s *Selection) untrack(p *proxyWatch) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.watches, p)
}

// and returns the label selector that requires both a and b, given in
// their string form ("" selects everything).
func and(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	}
	return a + "," + b
}
