package reselect

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
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
	// listedGen is the generation of the selector of the last List or
	// Watch that sent the initial state: the state that a paginated List
	// continues and a Watch from a resource version resumes. Guarded by
	// s.mu.
	listedGen uint64
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
// The watches it opens end with a 410 Expired error event when the
// selector changes. A List that continues a paginated one, or a Watch that
// resumes from a resource version, fails with a 410 Expired error when the
// initial state it builds on was listed with an older selector; a Watch
// whose selector changes while it opens fails so too. A reflector then
// lists again from the start.
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
func (l *listerWatcher) WatchWithContext(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	selector, gen, err := l.beginWatch(ptr.Deref(opts.SendInitialEvents, false))
	if err != nil {
		return nil, err
	}
	opts.LabelSelector = and(opts.LabelSelector, selector)
	w, err := l.inner.WatchWithContext(ctx, opts)
	if err != nil {
		return nil, err
	}
	return l.s.track(w, gen)
}

// beginList returns the selector of a List, which continues a paginated
// one when continuing.
func (l *listerWatcher) beginList(continuing bool) (string, error) {
	l.s.mu.Lock()
	defer l.s.mu.Unlock()
	if continuing && l.listedGen != l.s.gen {
		return "", expired()
	}
	l.listedGen = l.s.gen
	return l.s.selector.String(), nil
}

// beginWatch returns the selector of a Watch, which sends the initial state
// when initial, and its generation.
func (l *listerWatcher) beginWatch(initial bool) (string, uint64, error) {
	l.s.mu.Lock()
	defer l.s.mu.Unlock()
	if initial {
		l.listedGen = l.s.gen
	} else if l.listedGen != l.s.gen {
		return "", 0, expired()
	}
	return l.s.selector.String(), l.s.gen, nil
}

// track returns a watch that forwards the events of inner, opened with
// the selector of generation gen, until the selector changes. It fails
// when the selector has changed already.
func (s *Selection) track(inner watch.Interface, gen uint64) (watch.Interface, error) {
	s.mu.Lock()
	if gen != s.gen {
		s.mu.Unlock()
		inner.Stop()
		return nil, expired()
	}
	p := newProxyWatch(inner)
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
