package shard

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
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

	"github.com/windlass-dev/windlass/api/meta"
	"github.com/windlass-dev/windlass/internal/kinds"
	"github.com/windlass-dev/windlass/internal/metrics"
)

// Every object the members share carries its bucket in BucketLabel,
// written once, when the holder of the bucket first sees it (with the
// finalizer of the kinds that carry one, which the first run would add by
// a request of its own), and again only when its key moves it to another
// bucket. The caches of the kinds cached by bucket select the buckets a
// member holds by it.

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

// labelPatch is the merge patch that gives obj its bucket, on condition
// that obj is still at the version read. For an object of a kind that
// carries the reconcilers' finalizer (finalized), it also adds the
// finalizer when the object lacks it and is not being deleted.
func labelPatch(obj *metav1.PartialObjectMetadata, bucket int, finalized bool) []byte {
	metadata := map[string]any{"resourceVersion": obj.ResourceVersion, "labels": map[string]string{BucketLabel: BucketValue(bucket)}}
	if finalized && obj.DeletionTimestamp == nil && !slices.Contains(obj.Finalizers, meta.Finalizer) {
		metadata["finalizers"] = append(slices.Clone(obj.Finalizers), meta.Finalizer)
	}
	patch, _ := json.Marshal(map[string]any{"metadata": metadata}) // maps of strings always marshal
	return patch
}

// relabelPatch is the JSON patch that moves an object from bucket from to
// bucket to, and fails when it is not in from.
func relabelPatch(from, to int) []byte {
	path := "/metadata/labels/" + strings.NewReplacer("~", "~0", "/", "~1").Replace(BucketLabel)
	patch, _ := json.Marshal([]map[string]string{
		{"op": "test", "path": path, "value": BucketValue(from)},
		{"op": "replace", "path": path, "value": BucketValue(to)},
	})
	return patch
}

// relabel moves obj, of kind, from bucket from, which this member holds,
// to bucket to, on condition that it is still in from.
func (m *Member) relabel(ctx context.Context, c client.Client, kind string, obj client.Object, from, to int) error {
	err := c.Patch(ctx, obj, client.RawPatch(types.JSONPatchType, relabelPatch(from, to)))
	if apierrors.IsNotFound(err) || apierrors.IsInvalid(err) || apierrors.IsConflict(err) {
		return nil // gone, or moved already
	}
	if err == nil {
		metrics.ShardLabelled.WithLabelValues(kind).Inc()
		ctrl.LoggerFrom(ctx).V(1).Info("Moved to another shard bucket", "from", from, "to", to)
	}
	return err
}

// labelItem is an object that has no bucket yet.
type labelItem struct {
	kind, key string
}

// labelQueue queues the objects that have no bucket yet, from the
// informers that watch them, to be labelled.
type labelQueue struct {
	workqueue.TypedInterface[labelItem]

	mu     sync.Mutex
	stores map[string]cache.Store
}

func newLabelQueue() *labelQueue {
	return &labelQueue{TypedInterface: workqueue.NewTyped[labelItem](), stores: map[string]cache.Store{}}
}

// store returns the store of the unlabelled objects of kind.
func (q *labelQueue) store(kind string) cache.Store {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.stores[kind]
}

// watch starts the informers of the objects that have no bucket: one per
// kind, of the objects' metadata, selected by label, so that in a steady
// state they hold nothing. Each object they report is queued.
func (q *labelQueue) watch(ctx context.Context, m *Member) error {
	unlabelled, err := labels.NewRequirement(BucketLabel, selection.DoesNotExist, nil)
	if err != nil {
		return err
	}
	selector := m.selector(*unlabelled).String()
	var synced []cache.InformerSynced
	for _, k := range m.opts.Kinds {
		gvr, err := m.resourceOf(k)
		if err != nil {
			return err
		}
		inf := metadatainformer.NewFilteredMetadataInformer(m.md, gvr, m.opts.WatchNamespace, 0, cache.Indexers{},
			func(o *metav1.ListOptions) { o.LabelSelector = selector }).Informer()
		kind := k.Kind
		add := func(obj any) {
			if key, err := cache.MetaNamespaceKeyFunc(obj); err == nil {
				q.Add(labelItem{kind: kind, key: key})
			}
		}
		if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc: add, UpdateFunc: func(_, obj any) { add(obj) },
		}); err != nil {
			return err
		}
		q.mu.Lock()
		q.stores[kind] = inf.GetStore()
		q.mu.Unlock()
		go inf.Run(ctx.Done())
		synced = append(synced, inf.HasSynced)
	}
	if !cache.WaitForCacheSync(ctx.Done(), synced...) {
		return ctx.Err()
	}
	return nil
}

// requeueAll queues every unlabelled object again: the member took
// buckets, and may now label some.
func (q *labelQueue) requeueAll() {
	q.mu.Lock()
	defer q.mu.Unlock()
	for kind, store := range q.stores {
		for _, key := range store.ListKeys() {
			q.Add(labelItem{kind: kind, key: key})
		}
	}
}

// labelWorkers is how many objects a member labels at once.
const labelWorkers = 8

// runLabels labels the queued objects whose bucket this member holds,
// labelWorkers at a time, until ctx is done.
func (m *Member) runLabels(ctx context.Context) {
	go func() {
		<-ctx.Done()
		m.unlabelled.ShutDown()
	}()
	var workers sync.WaitGroup
	for range labelWorkers {
		workers.Go(func() { m.labelQueued(ctx) })
	}
	workers.Wait()
}

// labelQueued labels the queued objects one after another, until the
// queue shuts down. The queue never hands one object to two workers.
func (m *Member) labelQueued(ctx context.Context) {
	for {
		item, shutdown := m.unlabelled.Get()
		if shutdown {
			return
		}
		if err := m.labelUnlabelled(ctx, item); err != nil {
			ctrl.LoggerFrom(ctx).Error(err, "Labelling an object with its shard bucket", "kind", item.kind, "object", item.key)
			go m.retryLabel(ctx, item)
		}
		m.unlabelled.Done(item)
	}
}

// retryLabel queues item again after a while.
func (m *Member) retryLabel(ctx context.Context, item labelItem) {
	select {
	case <-ctx.Done():
	case <-time.After(m.renewEvery()):
		m.unlabelled.Add(item)
	}
}

// labelUnlabelled labels the object of item with its bucket when this
// member holds the bucket, unless the object changed since it was read.
func (m *Member) labelUnlabelled(ctx context.Context, item labelItem) error {
	store := m.unlabelled.store(item.kind)
	if store == nil {
		return nil
	}
	o, exists, err := store.GetByKey(item.key)
	if err != nil || !exists {
		return err
	}
	obj, ok := o.(*metav1.PartialObjectMetadata)
	if !ok {
		return nil
	}
	b := BucketOf(m.keyOf(item.kind, obj))
	if !m.holdsBucket(b) {
		return nil
	}
	k, _ := kinds.Named(item.kind)
	gvr, err := m.resourceOf(k)
	if err != nil {
		return err
	}
	return m.label(ctx, item.kind, gvr, obj, b)
}

// label gives obj, of kind, bucket b, unless obj changed since it was
// read: then the change is someone else's to make, or the next look's.
func (m *Member) label(ctx context.Context, kind string, gvr schema.GroupVersionResource, obj *metav1.PartialObjectMetadata, b int) error {
	_, err := m.md.Resource(gvr).Namespace(obj.Namespace).Patch(ctx, obj.Name, types.MergePatchType,
		labelPatch(obj, b, kinds.Finalized(kind)), metav1.PatchOptions{})
	if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
		return nil
	}
	if err == nil {
		metrics.ShardLabelled.WithLabelValues(kind).Inc()
		ctrl.LoggerFrom(ctx).V(1).Info("Labelled with its shard bucket", "resource", gvr.Resource,
			"namespace", obj.Namespace, "name", obj.Name, "shardBucket", b)
	}
	return err
}
