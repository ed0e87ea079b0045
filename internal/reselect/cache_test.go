package reselect_test

import (
	"context"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/windlass-dev/windlass/internal/reselect"
	"github.com/windlass-dev/windlass/internal/testutil/testenv"
)

var env *testenv.Environment

func TestMain(m *testing.M) { os.Exit(testenv.Run(m, &env)) }

// seen records the names an informer's handler saw added, updated and
// deleted.
type seen struct {
	mu      sync.Mutex
	added   []string
	updated []string
	deleted []string
}

func (s *seen) handler() toolscache.ResourceEventHandler {
	return toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { s.record(&s.added, obj) },
		UpdateFunc: func(_, obj any) { s.record(&s.updated, obj) },
		DeleteFunc: func(obj any) {
			if d, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
				obj = d.Obj
			}
			s.record(&s.deleted, obj)
		},
	}
}

func (s *seen) record(names *[]string, obj any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	*names = append(*names, obj.(*corev1.ConfigMap).Name)
}

// Added returns the names seen added.
func (s *seen) Added() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.added)
}

// Updated returns the names seen updated.
func (s *seen) Updated() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.updated)
}

// Deleted returns the names seen deleted.
func (s *seen) Deleted() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.deleted)
}

// createConfigMap creates the ConfigMap name in ns, labelled with bucket
// unless empty.
func createConfigMap(g Gomega, ns, name, bucket string) {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}}
	if bucket != "" {
		cm.Labels = map[string]string{"bucket": bucket}
	}
	g.Expect(env.Client.Create(context.Background(), cm)).To(Succeed())
}

// bucketsNamespace returns a new namespace with a ConfigMap b<n> in each
// bucket n of 1, 2 and 3.
func bucketsNamespace(t *testing.T, g Gomega) string {
	ns := env.CreateNamespace(t)
	for _, b := range []string{"1", "2", "3"} {
		createConfigMap(g, ns, "b"+b, b)
	}
	return ns
}

// cached returns the names of the ConfigMaps of ns that c holds.
func cached(g Gomega, c cache.Cache, ns string) func() []string {
	return func() []string {
		var list corev1.ConfigMapList
		g.Expect(c.List(context.Background(), &list, client.InNamespace(ns))).To(Succeed())
		var names []string
		for _, cm := range list.Items {
			names = append(names, cm.Name)
		}
		slices.Sort(names)
		return names
	}
}

// requests records the requests of the informers a cache made: how many
// Lists and Watches sent every object (the initial state), and the
// selectors of the Lists of an exact resource version.
type requests struct {
	mu    sync.Mutex
	full  int
	exact []string
}

// Full returns how many requests sent every object.
func (r *requests) Full() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.full
}

// Exact returns the selectors of the Lists of an exact resource version.
func (r *requests) Exact() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.exact)
}

// wrap returns lw, recording its requests.
func (r *requests) wrap(lw toolscache.ListerWatcher) toolscache.ListerWatcher {
	inner := toolscache.ToListerWatcherWithContext(lw)
	return &toolscache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			r.mu.Lock()
			if opts.ResourceVersionMatch == metav1.ResourceVersionMatchExact {
				r.exact = append(r.exact, opts.LabelSelector)
			} else if opts.Continue == "" {
				r.full++
			}
			r.mu.Unlock()
			return inner.ListWithContext(ctx, opts)
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			if ptr.Deref(opts.SendInitialEvents, false) {
				r.mu.Lock()
				r.full++
				r.mu.Unlock()
			}
			return inner.WatchWithContext(ctx, opts)
		},
	}
}

// startCache starts a cache of the ConfigMaps of ns that sel selects, and
// returns it with what its handler sees and the requests of its informer.
func startCache(ctx context.Context, g Gomega, ns string, sel *reselect.Selection) (cache.Cache, *seen, *requests) {
	reqs := &requests{}
	hook := reselect.NewInformer(sel.For(&corev1.ConfigMap{}))
	c, err := cache.New(env.Config, cache.Options{
		Scheme:            env.Scheme,
		DefaultNamespaces: map[string]cache.Config{ns: {}},
		NewInformer: func(lw toolscache.ListerWatcher, obj runtime.Object, resync time.Duration, idx toolscache.Indexers) toolscache.SharedIndexInformer {
			return hook(reqs.wrap(lw), obj, resync, idx)
		},
	})
	g.Expect(err).NotTo(HaveOccurred())
	inf, err := c.GetInformer(ctx, &corev1.ConfigMap{})
	g.Expect(err).NotTo(HaveOccurred())
	events := &seen{}
	_, err = inf.AddEventHandler(events.handler())
	g.Expect(err).NotTo(HaveOccurred())
	go func() { _ = c.Start(ctx) }()
	g.Expect(c.WaitForCacheSync(ctx)).To(BeTrue())
	return c, events, reqs
}

// TestCacheFollowsSetsWithoutListingAgain checks that a Set brings the
// objects of the values it adds into the cache, and drops those of the
// values it removes, with one List of those values each, without sending
// the objects of the values it kept again; and that a change made
// meanwhile to an object it kept, or to one of a value added, reaches the
// cache.
func TestCacheFollowsSetsWithoutListingAgain(t *testing.T) {
	g := NewWithT(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ns := bucketsNamespace(t, g)
	sel, err := reselect.New(nil, "bucket", []string{"1"})
	g.Expect(err).NotTo(HaveOccurred())
	c, events, reqs := startCache(ctx, g, ns, sel)
	g.Expect(cached(g, c, ns)()).To(Equal([]string{"b1"}))
	// A watch that ends within a second of its start with no event is one
	// the reflector backs off from: this one has had an event.
	createConfigMap(g, ns, "b1-early", "1")
	g.Eventually(cached(g, c, ns)).Should(Equal([]string{"b1", "b1-early"}))
	g.Expect(reqs.Full()).To(Equal(1))

	start := time.Now()
	g.Expect(sel.Set([]string{"1", "2"})).To(Succeed())
	createConfigMap(g, ns, "b2-new", "2")
	var b1 corev1.ConfigMap
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "b1"}, &b1)).To(Succeed())
	b1.Data = map[string]string{"changed": "meanwhile"}
	g.Expect(env.Client.Update(ctx, &b1)).To(Succeed())
	eventually := func(f any) AsyncAssertion {
		return g.Eventually(f).WithTimeout(30 * time.Second).WithPolling(50 * time.Millisecond)
	}
	eventually(cached(g, c, ns)).Should(Equal([]string{"b1", "b1-early", "b2", "b2-new"}))
	t.Logf("took the added value %v after the Set", time.Since(start))
	eventually(func() map[string]string {
		var got corev1.ConfigMap
		g.Expect(c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "b1"}, &got)).To(Succeed())
		return got.Data
	}).Should(Equal(b1.Data))
	g.Expect(reqs.Full()).To(Equal(1), "nothing sent every object again")
	g.Expect(reqs.Exact()).To(Equal([]string{"bucket in (2)"}))
	// The handlers hear of an object after the cache holds it.
	eventually(events.Added).Should(ConsistOf("b1", "b1-early", "b2", "b2-new"))
	g.Expect(events.Deleted()).To(BeEmpty())

	g.Expect(sel.Set([]string{"2", "3"})).To(Succeed())
	eventually(cached(g, c, ns)).Should(Equal([]string{"b2", "b2-new", "b3"}))
	eventually(events.Deleted).Should(ConsistOf("b1", "b1-early"))
	eventually(events.Added).Should(ConsistOf("b1", "b1-early", "b2", "b2-new", "b3"))
	g.Expect(reqs.Full()).To(Equal(1), "nothing sent every object again")
	g.Expect(reqs.Exact()).To(Equal([]string{"bucket in (2)", "bucket in (1)", "bucket in (3)"}))
}

// TestCacheFollowsSelection checks that a controller-runtime cache holds
// the ConfigMaps of the current buckets only, and that its handlers see
// the objects of buckets let go deleted and those of buckets taken added.
func TestCacheFollowsSelection(t *testing.T) {
	g := NewWithT(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ns := bucketsNamespace(t, g)
	createConfigMap(g, ns, "none", "")

	sel, err := reselect.New(nil, "bucket", []string{"1"})
	g.Expect(err).NotTo(HaveOccurred())
	c, events, _ := startCache(ctx, g, ns, sel)
	g.Expect(cached(g, c, ns)()).To(Equal([]string{"b1"}))
	g.Eventually(events.Added).Should(Equal([]string{"b1"}))

	eventually := func(f any) AsyncAssertion {
		return g.Eventually(f).WithTimeout(30 * time.Second).WithPolling(50 * time.Millisecond)
	}
	start := time.Now()
	g.Expect(sel.Set([]string{"3", "2"})).To(Succeed())
	eventually(cached(g, c, ns)).Should(Equal([]string{"b2", "b3"}))
	t.Logf("followed %v after the first Set", time.Since(start))
	eventually(events.Deleted).Should(Equal([]string{"b1"}))
	eventually(events.Added).Should(ConsistOf("b1", "b2", "b3"))

	// b1-new is created before b3-new: once b3-new is cached, the watch
	// has gone past b1-new, which it does not select.
	createConfigMap(g, ns, "b1-new", "1")
	createConfigMap(g, ns, "b3-new", "3")
	eventually(cached(g, c, ns)).Should(Equal([]string{"b2", "b3", "b3-new"}))
	// The handlers hear of b3-new after the cache holds it.
	eventually(events.Added).Should(ConsistOf("b1", "b2", "b3", "b3-new"))

	start = time.Now()
	g.Expect(sel.Set(nil)).To(Succeed())
	eventually(cached(g, c, ns)).Should(BeEmpty())
	t.Logf("followed %v after the second Set", time.Since(start))
	eventually(events.Deleted).Should(ConsistOf("b1", "b2", "b3", "b3-new"))
	g.Expect(events.Added()).To(ConsistOf("b1", "b2", "b3", "b3-new"))
}
