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
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/windlass-dev/windlass/internal/reselect"
	"github.com/windlass-dev/windlass/internal/testutil/testenv"
)

var env *testenv.Environment

func TestMain(m *testing.M) { os.Exit(testenv.Run(m, &env)) }

// seen records the names an informer's handler saw added and deleted.
type seen struct {
	mu      sync.Mutex
	added   []string
	deleted []string
}

func (s *seen) handler() toolscache.ResourceEventHandler {
	return toolscache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) { s.record(&s.added, obj) },
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

// TestCacheFollowsSelection checks that a controller-runtime cache holds
// the ConfigMaps of the current buckets only, and that its handlers see
// the objects of buckets let go deleted and those of buckets taken added.
func TestCacheFollowsSelection(t *testing.T) {
	g := NewWithT(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ns := env.CreateNamespace(t)
	for _, b := range []string{"1", "2", "3"} {
		createConfigMap(g, ns, "b"+b, b)
	}
	createConfigMap(g, ns, "none", "")

	sel, err := reselect.New(nil, "bucket", []string{"1"})
	g.Expect(err).NotTo(HaveOccurred())
	c, err := cache.New(env.Config, cache.Options{
		Scheme:            env.Scheme,
		DefaultNamespaces: map[string]cache.Config{ns: {}},
		NewInformer:       reselect.NewInformer(sel.For(&corev1.ConfigMap{})),
	})
	g.Expect(err).NotTo(HaveOccurred())
	inf, err := c.GetInformer(ctx, &corev1.ConfigMap{})
	g.Expect(err).NotTo(HaveOccurred())
	var events seen
	_, err = inf.AddEventHandler(events.handler())
	g.Expect(err).NotTo(HaveOccurred())
	go func() { _ = c.Start(ctx) }()
	g.Expect(c.WaitForCacheSync(ctx)).To(BeTrue())
	g.Expect(cached(g, c, ns)()).To(Equal([]string{"b1"}))
	g.Eventually(events.Added).Should(Equal([]string{"b1"}))

	eventually := func(f any) AsyncAssertion {
		return g.Eventually(f).WithTimeout(30 * time.Second).WithPolling(50 * time.Millisecond)
	}
	start := time.Now()
	g.Expect(sel.Set([]string{"3", "2"})).To(Succeed())
	eventually(cached(g, c, ns)).Should(Equal([]string{"b2", "b3"}))
	t.Logf("relisted %v after the first Set", time.Since(start))
	eventually(events.Deleted).Should(Equal([]string{"b1"}))
	eventually(events.Added).Should(ConsistOf("b1", "b2", "b3"))

	// b1-new is created before b3-new: once b3-new is cached, the watch
	// has gone past b1-new, which it does not select.
	createConfigMap(g, ns, "b1-new", "1")
	createConfigMap(g, ns, "b3-new", "3")
	eventually(cached(g, c, ns)).Should(Equal([]string{"b2", "b3", "b3-new"}))
	g.Expect(events.Added()).To(ConsistOf("b1", "b2", "b3", "b3-new"))

	start = time.Now()
	g.Expect(sel.Set(nil)).To(Succeed())
	eventually(cached(g, c, ns)).Should(BeEmpty())
	t.Logf("relisted %v after the second Set", time.Since(start))
	eventually(events.Deleted).Should(ConsistOf("b1", "b2", "b3", "b3-new"))
	g.Expect(events.Added()).To(ConsistOf("b1", "b2", "b3", "b3-new"))
}
