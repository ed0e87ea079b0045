package shard

import (
	"context"
	"fmt"
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
// claims what this member owns and nobody live holds.
func (m *Member) rebalance(ctx context.Context) {
	ring := m.Ring()
	if !ring.Has(m.opts.Name) {
		return
	}
	for _, k := range m.opts.Kinds {
		if err := m.askHandovers(ctx, k, ring); err != nil {
			ctrl.LoggerFrom(ctx).Error(err, "Listing the objects to hand over", "kind", k.Kind)
		}
		if err := m.claimOrphans(ctx, k, ring); err != nil {
			ctrl.LoggerFrom(ctx).Error(err, "Claiming the objects of members that left", "kind", k.Kind)
		}
	}
	for kind, store := range m.unlabelledStores() {
		for _, key := range store.ListKeys() {
			m.claims.Add(claimItem{kind: kind, key: key})
		}
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

// claimOrphans claims the objects of k that this member owns and whose
// holder is not in the ring: a member that left or died.
func (m *Member) claimOrphans(ctx context.Context, k kinds.Kind, ring Ring) error {
	held, err := labels.NewRequirement(HolderLabel, selection.Exists, nil)
	if err != nil {
		return err
	}
	notLive, err := labels.NewRequirement(HolderLabel, selection.NotIn, ring.Members())
	if err != nil {
		return err
	}
	gvr, err := m.resourceOf(k)
	if err != nil {
		return err
	}
	opts := metav1.ListOptions{LabelSelector: m.selector(*held, *notLive).String(), Limit: 500}
	for {
		list, err := m.md.Resource(gvr).Namespace(m.opts.WatchNamespace).List(ctx, opts)
		if err != nil {
			return err
		}
		for i := range list.Items {
			obj := &list.Items[i]
			if ring.Owner(m.keyOf(k.Kind, obj)) == m.opts.Name {
				if err := m.claim(ctx, k.Kind, gvr, obj); err != nil {
					return err
				}
			}
		}
		if opts.Continue = list.Continue; opts.Continue == "" {
			return nil
		}
	}
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
	body := fmt.Sprintf(`{"metadata":{"resourceVersion":%q,"labels":{%q:%q}}}`, obj.ResourceVersion, HolderLabel, m.opts.Name)
	_, err := m.md.Resource(gvr).Namespace(obj.Namespace).Patch(ctx, obj.Name, types.MergePatchType, []byte(body), metav1.PatchOptions{})
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

// claimItem is an object that nobody held when its informer saw it.
type claimItem struct {
	kind, key string
}

// claimQueue claims the objects that nobody holds, one at a time.
type claimQueue struct {
	workqueue.TypedInterface[claimItem]
	stores map[string]cache.Store
}

func newClaimQueue() *claimQueue {
	return &claimQueue{TypedInterface: workqueue.NewTyped[claimItem](), stores: map[string]cache.Store{}}
}

// unlabelledStores returns the stores of the objects that nobody holds,
// by kind.
func (m *Member) unlabelledStores() map[string]cache.Store { return m.claims.stores }

// watchUnlabelled starts, for each kind, the informer of the metadata of
// the objects that nobody holds (in a steady state, none: it costs a watch
// and little memory), and returns their HasSynced.
func (m *Member) watchUnlabelled(ctx context.Context) ([]cache.InformerSynced, error) {
	unheld, err := labels.NewRequirement(HolderLabel, selection.DoesNotExist, nil)
	if err != nil {
		return nil, err
	}
	selector := m.selector(*unheld).String()
	var synced []cache.InformerSynced
	for _, k := range m.opts.Kinds {
		gvr, err := m.resourceOf(k)
		if err != nil {
			return nil, err
		}
		inf := metadatainformer.NewFilteredMetadataInformer(m.md, gvr, m.opts.WatchNamespace, 0, cache.Indexers{},
			func(o *metav1.ListOptions) { o.LabelSelector = selector }).Informer()
		add := func(obj any) {
			if key, err := cache.MetaNamespaceKeyFunc(obj); err == nil {
				m.claims.Add(claimItem{kind: k.Kind, key: key})
			}
		}
		if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc: add, UpdateFunc: func(_, obj any) { add(obj) },
		}); err != nil {
			return nil, err
		}
		m.claims.stores[k.Kind] = inf.GetStore()
		go inf.Run(ctx.Done())
		synced = append(synced, inf.HasSynced)
	}
	return synced, nil
}

// runClaims claims the queued objects that this member owns, until ctx is
// done.
func (m *Member) runClaims(ctx context.Context) {
	go func() {
		<-ctx.Done()
		m.claims.ShutDown()
	}()
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

// claimUnheld claims the object of item when nobody holds it yet and this
// member owns it.
func (m *Member) claimUnheld(ctx context.Context, item claimItem) error {
	store := m.claims.stores[item.kind]
	o, exists, err := store.GetByKey(item.key)
	if err != nil || !exists {
		return err
	}
	obj, ok := o.(*metav1.PartialObjectMetadata)
	if !ok || obj.Labels[HolderLabel] != "" {
		return nil
	}
	ring := m.Ring()
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
