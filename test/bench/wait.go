package main

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kustomizev1 "github.com/windlass-dev/windlass/api/kustomize/v1"
	"github.com/windlass-dev/windlass/api/meta"
)

// waitAll waits until want objects of the kind of list in namespace ns
// satisfy done. It lists, then watches from the list's resource version,
// and lists again whenever the watch ends, so that it sees every change
// without polling. When ctx ends it returns an error that names a few of
// the objects still not done, described by describe.
func waitAll(ctx context.Context, c client.WithWatch, ns string, list client.ObjectList, want int,
	done func(client.Object) bool, describe func(client.Object) string, opts ...client.ListOption) error {
	opts = append([]client.ListOption{client.InNamespace(ns)}, opts...)
	state := map[string]client.Object{}
	finished := map[string]bool{}
	track := func(obj client.Object) {
		state[obj.GetName()] = obj
		if done(obj) {
			finished[obj.GetName()] = true
		} else {
			delete(finished, obj.GetName())
		}
	}
	check := func() bool { return len(finished) >= want }
	for {
		l := list.DeepCopyObject().(client.ObjectList)
		if err := c.List(ctx, l, opts...); err != nil {
			return pending(err, state, done, describe)
		}
		items, err := apimeta.ExtractList(l)
		if err != nil {
			return err
		}
		clear(state)
		clear(finished)
		for _, item := range items {
			track(item.(client.Object))
		}
		if check() {
			return nil
		}
		w, err := c.Watch(ctx, list.DeepCopyObject().(client.ObjectList),
			append(opts, &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: l.GetResourceVersion()}})...)
		if err != nil {
			return pending(err, state, done, describe)
		}
		for ev := range w.ResultChan() {
			obj, ok := ev.Object.(client.Object)
			if !ok || ev.Type == watch.Error || ev.Type == watch.Bookmark {
				continue
			}
			if ev.Type == watch.Deleted {
				delete(state, obj.GetName())
				delete(finished, obj.GetName())
			} else {
				track(obj)
			}
			if check() {
				w.Stop()
				return nil
			}
		}
		w.Stop()
		if ctx.Err() != nil {
			return pending(ctx.Err(), state, done, describe)
		}
	}
}

// firstTimes records when each object first satisfied a predicate, counted
// from start. It is used by one goroutine.
type firstTimes struct {
	start time.Time
	at    map[string]time.Duration
}

// record returns done, recording the first time it holds for an object.
func (f *firstTimes) record(done func(client.Object) bool) func(client.Object) bool {
	return func(obj client.Object) bool {
		ok := done(obj)
		if _, seen := f.at[obj.GetName()]; ok && !seen {
			if f.at == nil {
				f.at = map[string]time.Duration{}
			}
			f.at[obj.GetName()] = time.Since(f.start)
		}
		return ok
	}
}

// quantiles returns the 10%, 50%, 90% and 99% quantiles of the recorded
// times, in seconds.
func (f *firstTimes) quantiles() []float64 {
	return quantiles(slices.Collect(maps.Values(f.at)), 0.1, 0.5, 0.9, 0.99)
}

// pending wraps err with a description of up to five objects not done.
func pending(err error, state map[string]client.Object,
	done func(client.Object) bool, describe func(client.Object) string) error {
	var names []string
	for name, obj := range state {
		if !done(obj) {
			names = append(names, name+": "+describe(obj))
		}
	}
	sort.Strings(names)
	n := len(names)
	if n > 5 {
		names = names[:5]
	}
	return fmt.Errorf("%w; %d of %d not done, e.g. %s", err, n, len(state), strings.Join(names, "; "))
}

// appKind is what the phases need to know of the kind of the
// applications' objects: Kustomizations, or HelmReleases with -kind
// helmrelease.
type appKind struct {
	// kind is the kind's name, for messages.
	kind string
	// newObject and newList return an empty object and list of the kind.
	newObject func() client.Object
	newList   func() client.ObjectList
	// ready reports whether an object is Ready for its current
	// generation; applied whether it has applied (or released) once.
	ready, applied func(client.Object) bool
	// describe summarises an object's state for an error.
	describe func(client.Object) string
	// sourceList is an empty list of the sources whose first artifact the
	// ready phase's timeline records, and nSources how many there are.
	sourceList client.ObjectList
	nSources   int
	// ns is the namespace of the objects ("": several), and opts select
	// them among the objects of the kind there.
	ns   string
	opts []client.ListOption
}

// kustomizationApps is the appKind of the Kustomizations in namespace ns,
// whose timeline records the nSources sources of sourceList's kind.
func kustomizationApps(ns string, sourceList client.ObjectList, nSources int) appKind {
	return appKind{
		ns:         ns,
		kind:       kustomizev1.KustomizationKind,
		newObject:  func() client.Object { return &kustomizev1.Kustomization{} },
		newList:    func() client.ObjectList { return &kustomizev1.KustomizationList{} },
		ready:      ksReady,
		applied:    hasApplied,
		describe:   describeKs,
		sourceList: sourceList,
		nSources:   nSources,
	}
}

// ksReady reports whether a Kustomization's Ready condition is True for
// its current generation.
func ksReady(obj client.Object) bool {
	k := obj.(*kustomizev1.Kustomization)
	return k.Status.ObservedGeneration == k.Generation &&
		apimeta.IsStatusConditionTrue(k.Status.Conditions, meta.ReadyCondition)
}

// hasApplied reports whether a Kustomization has applied a revision.
func hasApplied(obj client.Object) bool {
	return obj.(*kustomizev1.Kustomization).Status.LastAppliedRevision != ""
}

// describeKs summarises a Kustomization's Ready condition and revision.
func describeKs(obj client.Object) string {
	k := obj.(*kustomizev1.Kustomization)
	c := apimeta.FindStatusCondition(k.Status.Conditions, meta.ReadyCondition)
	if c == nil {
		return "no Ready condition, applied " + k.Status.LastAppliedRevision
	}
	return fmt.Sprintf("Ready=%s %s: %s (applied %q)", c.Status, c.Reason, c.Message, k.Status.LastAppliedRevision)
}

// handled returns a predicate true once an object echoes token in
// status.lastHandledReconcileAt.
func handled(token string) func(client.Object) bool {
	return func(obj client.Object) bool { return lastHandled(obj) == token }
}

// appliedRevision returns a predicate true once a Kustomization is Ready
// with a last applied revision at head: a commit, or a digest (what
// follows the last colon of the revision, see sourceKit.Heads).
func appliedRevision(head string) func(client.Object) bool {
	return func(obj client.Object) bool {
		k := obj.(*kustomizev1.Kustomization)
		return strings.HasSuffix(k.Status.LastAppliedRevision, ":"+head) && ksReady(k)
	}
}

// requestReconcile annotates every object in objs with the reconcile
// request token, with up to workers patches at once.
func requestReconcile(ctx context.Context, c client.Client, objs []client.Object, token string, workers int) error {
	patch := client.RawPatch("application/merge-patch+json",
		[]byte(`{"metadata":{"annotations":{"`+meta.ReconcileRequestAnnotation+`":"`+token+`"}}}`))
	return parallel(ctx, len(objs), workers, func(i int) error {
		obj := objs[i].DeepCopyObject().(client.Object)
		if err := c.Patch(ctx, obj, patch); err != nil {
			return fmt.Errorf("annotating %s: %w", obj.GetName(), err)
		}
		return nil
	})
}

// parallel calls f(0) … f(n-1) on up to workers goroutines and returns the
// first error.
func parallel(ctx context.Context, n, workers int, f func(i int) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	next := make(chan int)
	var (
		wg       sync.WaitGroup
		once     sync.Once
		firstErr error
	)
	for range min(workers, n) {
		wg.Go(func() {
			for i := range next {
				if err := f(i); err != nil {
					once.Do(func() { firstErr = err; cancel() })
				}
			}
		})
	}
feed:
	for i := range n {
		select {
		case next <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(next)
	wg.Wait()
	if firstErr == nil && ctx.Err() != nil {
		// The parent context ended.
		return ctx.Err()
	}
	return firstErr
}
