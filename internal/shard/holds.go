package shard

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/windlass-dev/windlass/internal/kinds"
)

// Hold returns, when this member reconciles obj now, the function that the
// run of obj calls when it ends: the member holds obj's bucket and is not
// handing it over. It returns nil otherwise. An object whose key moved it
// to another bucket (its KeyLabel changed) is labelled with that bucket
// first, by the holder of the old one, from the worker that reconciles
// it, so that no run of it is under way here when the new bucket's holder
// starts one. Call it from the worker that reconciles obj.
func (m *Member) Hold(ctx context.Context, c client.Client, kind string, obj client.Object) (func(), error) {
	b, ok := ParseBucket(obj.GetLabels()[BucketLabel])
	if !ok {
		// Not labelled yet: the holder of its bucket labels it.
		return nil, nil
	}
	want := BucketOf(m.keyOf(kind, obj))
	if b == want {
		return m.hold(b), nil
	}
	if !m.holdsBucket(b) {
		return nil, nil
	}
	return nil, m.relabel(ctx, c, kind, obj, b, want)
}

// Moved returns the source of the requests that wake the objects of kind
// in the buckets this member takes or loses (see wake). The requests pass
// no predicate: Mine would refuse those of the buckets lost.
func (m *Member) Moved(kind string) source.Source {
	ch, ok := m.subs[kind]
	if !ok {
		ch = make(chan event.GenericEvent)
	}
	return source.Channel(ch, &handler.EnqueueRequestForObject{})
}

// wake asks the controllers to reconcile the objects of buckets, as the
// cache holds them: a run of an object of a bucket gained reconciles it,
// one of a bucket lost forgets it. (The objects of the kinds cached by
// bucket that the cache does not hold yet come with its next list.)
func (m *Member) wake(ctx context.Context, buckets []int) {
	if len(buckets) == 0 {
		return
	}
	in := map[string]bool{}
	for _, b := range buckets {
		in[BucketValue(b)] = true
	}
	for _, k := range m.opts.Kinds {
		ch, ok := m.subs[k.Kind]
		if !ok {
			continue
		}
		list := k.NewList()
		if err := m.cache.List(ctx, list, client.HasLabels{BucketLabel}); err != nil {
			ctrl.LoggerFrom(ctx).Error(err, "Listing the objects of the shard buckets moved", "kind", k.Kind)
			continue
		}
		for _, obj := range k.Items(list) {
			if !in[obj.GetLabels()[BucketLabel]] {
				continue
			}
			select {
			case ch <- event.GenericEvent{Object: obj}:
			case <-ctx.Done():
				return
			}
		}
	}
}

// Mine passes the events of the objects this member holds, or held
// before the change: a controller gets no event of another member's
// objects.
func (m *Member) Mine() predicate.Predicate {
	held := func(o client.Object) bool {
		if o == nil {
			return false
		}
		b, ok := ParseBucket(o.GetLabels()[BucketLabel])
		return ok && m.holdsBucket(b)
	}
	return predicate.Funcs{
		CreateFunc:  func(e event.CreateEvent) bool { return held(e.Object) },
		UpdateFunc:  func(e event.UpdateEvent) bool { return held(e.ObjectNew) || held(e.ObjectOld) },
		DeleteFunc:  func(e event.DeleteEvent) bool { return held(e.Object) },
		GenericFunc: func(e event.GenericEvent) bool { return held(e.Object) },
	}
}

// Moves passes the changes that may change who holds an object: of its
// bucket, or of the key it is hashed by.
func (m *Member) Moves() predicate.Predicate {
	return predicate.Funcs{
		CreateFunc: func(event.CreateEvent) bool { return false },
		UpdateFunc: func(e event.UpdateEvent) bool {
			o, n := e.ObjectOld.GetLabels(), e.ObjectNew.GetLabels()
			return o[BucketLabel] != n[BucketLabel] || o[KeyLabel] != n[KeyLabel]
		},
		DeleteFunc:  func(event.DeleteEvent) bool { return false },
		GenericFunc: func(event.GenericEvent) bool { return false },
	}
}

// Reports reports whether this member reports obj, of kind, in its
// metrics: it holds its bucket, or, for a kind that nobody holds (Alerts
// and Providers, ExternalArtifacts, read by every member), the ring
// assigns its bucket to this member.
func (m *Member) Reports(kind string, obj client.Object) bool {
	if row, _ := kinds.Named(kind); !row.Reconciled() {
		return m.Owns(kind, obj)
	}
	b, ok := ParseBucket(obj.GetLabels()[BucketLabel])
	return ok && m.holdsBucket(b)
}

// Owns reports whether the ring assigns the bucket of obj, of kind, to
// this member: it holds it, or will once it takes it.
func (m *Member) Owns(kind string, obj metav1.Object) bool {
	m.mu.Lock()
	assignment := m.assignment
	m.mu.Unlock()
	return assignment.Owner(BucketOf(m.keyOf(kind, obj))) == m.opts.Name
}

// HolderOf returns the member that holds obj (the holder of the Lease of
// its bucket), "" when none does or obj has no bucket yet.
func (m *Member) HolderOf(obj client.Object) string {
	b, ok := ParseBucket(obj.GetLabels()[BucketLabel])
	if !ok {
		return ""
	}
	return m.HolderOfBucket(b)
}

// keyOf returns what obj, of kind, is hashed by: Key, or for the kinds
// held as one, the controller that serves them.
func (m *Member) keyOf(kind string, obj metav1.Object) string {
	if row, ok := kinds.Named(kind); ok && row.ShardAsOne {
		return "controller:" + row.Controller
	}
	return Key(obj, m.opts.By)
}
