package shard

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/windlass-dev/windlass/api/meta"
	"github.com/windlass-dev/windlass/internal/kinds"
	"github.com/windlass-dev/windlass/internal/metrics"
)

// rebalanceOnChange rebalances whenever the ring changes.
func (m *Member) rebalanceOnChange(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-m.rebalanceAsked:
			m.rebalance(ctx)
		}
	}
}

// rebalance makes the objects' holders follow the ring: it asks the
// controllers to hand over what this member holds and another owns, and
// watches anew what no live member holds, to claim what this member owns.
func (m *Member) rebalance(ctx context.Context) {
	ring := m.Ring()
	if !ring.Has(m.opts.Name) {
		return
	}
	for _, k := range m.opts.Kinds {
		if err := m.askHandovers(ctx, k, ring); err != nil {
			ctrl.LoggerFrom(ctx).Error(err, "Listing the objects to hand over", "kind", k.Kind)
		}
	}
	if err := m.claims.watch(ctx, m, ring); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Watching the objects no member holds")
	}
}

// askHandovers asks the controller of k to reconcile, and so hand over,
// the objects this member holds and another owns.
func (m *Member) askHandovers(ctx context.Context, k kinds.Kind, ring Ring) error {
	ch, ok := m.subs[k.Kind]
	if !ok {
		return nil
	}
	list := k.NewList()
	if err := m.cache.List(ctx, list, client.MatchingLabels{HolderLabel: m.opts.Name}); err != nil {
		return err
	}
	for _, obj := range k.Items(list) {
		if ring.Owner(m.keyOf(k.Kind, obj)) == m.opts.Name {
			continue
		}
		select {
		case ch <- event.GenericEvent{Object: obj}:
		case <-ctx.Done():
			return nil
		}
	}
	return nil
}

// selector is the --watch-label-selector with reqs added.
func (m *Member) selector(reqs ...labels.Requirement) labels.Selector {
	s := labels.Everything()
	if m.opts.Selector != nil {
		s = m.opts.Selector
	}
	return s.Add(reqs...)
}

// resourceOf returns the resource of k's objects.
func (m *Member) resourceOf(k kinds.Kind) (schema.GroupVersionResource, error) {
	m.mu.Lock()
	gvr, ok := m.resource[k.Kind]
	m.mu.Unlock()
	if ok {
		return gvr, nil
	}
	mapping, err := m.mapper.RESTMapping(k.GroupVersionKind().GroupKind(), k.GroupVersion.Version)
	if err != nil {
		return schema.GroupVersionResource{}, fmt.Errorf("finding the resource of %s: %w", k.Kind, err)
	}
	m.mu.Lock()
	m.resource[k.Kind] = mapping.Resource
	m.mu.Unlock()
	return mapping.Resource, nil
}

// claim writes this member as obj's holder, unless obj changed since it
// was read (its holder's too): then the change is someone else's to make,
// or the next look's.
func (m *Member) claim(ctx context.Context, kind string, gvr schema.GroupVersionResource, obj *metav1.PartialObjectMetadata) error {
	_, err := m.md.Resource(gvr).Namespace(obj.Namespace).Patch(ctx, obj.Name, types.MergePatchType, claimPatch(obj, m.opts.Name, kinds.Finalized(kind)), metav1.PatchOptions{})
	if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
		return nil
	}
	if err == nil {
		metrics.ShardMoves.WithLabelValues(kind, "claimed").Inc()
		ctrl.LoggerFrom(ctx).V(1).Info("Claimed", "resource", gvr.Resource, "namespace", obj.Namespace, "name", obj.Name,
			"from", obj.Labels[HolderLabel])
	}
	return err
}

// claimPatch is the merge patch that makes holder obj's holder, on
// condition that obj is still at the version read. For an object of a
// kind that carries the reconcilers' finalizer (finalized), it also adds
// the finalizer when the object lacks it and is not being deleted, which
// the holder's first run would add by a request of its own.
func claimPatch(obj *metav1.PartialObjectMetadata, holder string, finalized bool) []byte {
	metadata := map[string]any{"resourceVersion": obj.ResourceVersion, "labels": map[string]string{HolderLabel: holder}}
	if finalized && obj.DeletionTimestamp == nil && !slices.Contains(obj.Finalizers, meta.Finalizer) {
		metadata["finalizers"] = append(slices.Clone(obj.Finalizers), meta.Finalizer)
	}
	patch, _ := json.Marshal(map[string]any{"metadata": metadata}) // maps of strings always marshal
	return patch
}

// claimItem is an object that no live member held when its informer saw
// it.
type claimItem struct {
	kind, key string
}

// claimQueue queues the objects that no live member holds, from the
// informers that watch them, to be claimed.
type claimQueue struct {
	workqueue.TypedInterface[claimItem]

	mu     sync.Mutex
	stores map[string]cache.Store
	// stop ends the informers of the ring before the current one.
	stop context.CancelFunc
}

func newClaimQueue() *claimQueue {
	return &claimQueue{TypedInterface: workqueue.NewTyped[claimItem](), stores: map[string]cache.Store{}}
}

// store returns the store of the unheld objects of kind.
func (q *claimQueue) store(kind string) cache.Store {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.stores[kind]
}

// watch replaces the informers of the objects that no member of ring holds
// (unlabelled, or labelled with a member that left): one per kind, of the
// objects' metadata, selected by label, so that in a steady state they
// hold nothing. Each object they report is queued to be claimed.
func (q *claimQueue) watch(ctx context.Context, m *Member, ring Ring) error {
	unheld, err := labels.NewRequirement(HolderLabel, selection.NotIn, ring.Members())
	if err != nil {
		return err
	}
	selector := m.selector(*unheld).String()
	watchCtx, stop := context.WithCancel(ctx)
	stores := map[string]cache.Store{}
	var synced []cache.InformerSynced
	for _, k := range m.opts.Kinds {
		gvr, err := m.resourceOf(k)
		if err != nil {
			stop()
			return err
		}
		inf := metadatainformer.NewFilteredMetadataInformer(m.md, gvr, m.opts.WatchNamespace, 0, cache.Indexers{},
			func(o *metav1.ListOptions) { o.LabelSelector = selector }).Informer()
		kind := k.Kind
		add := func(obj any) {
			if key, err := cache.MetaNamespaceKeyFunc(obj); err == nil {
				q.Add(claimItem{kind: kind, key: key})
			}
		}
		if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc: add, UpdateFunc: func(_, obj any) { add(obj) },
		}); err != nil {
			stop()
			return err
		}
		stores[kind] = inf.GetStore()
		go inf.Run(watchCtx.Done())
		synced = append(synced, inf.HasSynced)
	}
	q.mu.Lock()
	if q.stop != nil {
		q.stop()
	}
	q.stores, q.stop = stores, stop
	q.mu.Unlock()
	if !cache.WaitForCacheSync(watchCtx.Done(), synced...) {
		return ctx.Err()
	}
	// What the handlers queued before the stores were swapped in.
	for kind, store := range stores {
		for _, key := range store.ListKeys() {
			q.Add(claimItem{kind: kind, key: key})
		}
	}
	return nil
}

// claimWorkers is how many claims a member sends at once. When a member
// is lost, each survivor claims its part of the lost share at once; one
// claim at a time, the claims alone took about as long as the whole
// takeover, their runs following them.
const claimWorkers = 8

// runClaims claims the queued objects that this member owns, claimWorkers
// at a time, until ctx is done.
func (m *Member) runClaims(ctx context.Context) {
	go func() {
		<-ctx.Done()
		m.claims.ShutDown()
	}()
	var workers sync.WaitGroup
	for range claimWorkers {
		workers.Go(func() { m.claimQueued(ctx) })
	}
	workers.Wait()
}

// claimQueued claims the queued objects one after another, until the
// queue shuts down. The queue never hands one object to two workers.
func (m *Member) claimQueued(ctx context.Context) {
	for {
		item, shutdown := m.claims.Get()
		if shutdown {
			return
		}
		if err := m.claimUnheld(ctx, item); err != nil {
			ctrl.LoggerFrom(ctx).Error(err, "Claiming an object", "kind", item.kind, "object", item.key)
			go m.retryClaim(ctx, item)
		}
		m.claims.Done(item)
	}
}

// retryClaim queues item again after a while.
func (m *Member) retryClaim(ctx context.Context, item claimItem) {
	select {
	case <-ctx.Done():
	case <-time.After(m.renewEvery()):
		m.claims.Add(item)
	}
}

// claimUnheld claims the object of item when no live member holds it and
// this member owns it.
func (m *Member) claimUnheld(ctx context.Context, item claimItem) error {
	store := m.claims.store(item.kind)
	if store == nil {
		return nil
	}
	o, exists, err := store.GetByKey(item.key)
	if err != nil || !exists {
		return err
	}
	obj, ok := o.(*metav1.PartialObjectMetadata)
	ring := m.Ring()
	if !ok || ring.Has(obj.Labels[HolderLabel]) {
		return nil
	}
	if !ring.Has(m.opts.Name) || ring.Owner(m.keyOf(item.kind, obj)) != m.opts.Name {
		return nil
	}
	k, _ := kinds.Named(item.kind)
	gvr, err := m.resourceOf(k)
	if err != nil {
		return err
	}
	return m.claim(ctx, item.kind, gvr, obj)
}
