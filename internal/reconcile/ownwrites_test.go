package reconcile

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/windlass-dev/windlass/api/meta"
	sourcev1 "github.com/windlass-dev/windlass/api/source/v1"
	"github.com/windlass-dev/windlass/internal/reconcile/outcome"
	"github.com/windlass-dev/windlass/internal/scheme"
)

func TestOwnWritesBehind(t *testing.T) {
	key := types.NamespacedName{Namespace: "ns", Name: "repo"}
	tests := []struct {
		name    string
		written string
		cached  string
		behind  bool
	}{
		{name: "nothing written", cached: "10"},
		{name: "the cache holds an older version", written: "12", cached: "10", behind: true},
		{name: "an older version with fewer digits", written: "100", cached: "99", behind: true},
		{name: "the cache holds the written version", written: "12", cached: "12"},
		{name: "the cache holds a newer version", written: "12", cached: "15"},
		{name: "a version that is not a number ends the wait", written: "12", cached: "abc"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			var w ownWrites
			w.record(key, tt.written)
			g.Expect(w.behind(key, tt.cached)).To(Equal(tt.behind))
			if !tt.behind {
				_, kept := w.written.Load(key)
				g.Expect(kept).To(BeFalse(), "a wait that ended is forgotten")
			}
		})
	}
}

// laggingCache is a client whose reads of GitRepositories return stale,
// when set, as an informer's cache does until a write's event arrives.
type laggingCache struct {
	client.Client
	stale *sourcev1.GitRepository
}

func (c *laggingCache) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if repo, ok := obj.(*sourcev1.GitRepository); ok && c.stale != nil {
		*repo = *c.stale.DeepCopy()
		return nil
	}
	return c.Client.Get(ctx, key, obj, opts...)
}

func TestRunnerWaitsForTheCacheToSeeItsOwnWrites(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	obj := newRepo()
	obj.Finalizers = []string{meta.Finalizer}
	api := fake.NewClientBuilder().WithScheme(scheme.New()).WithObjects(obj).
		WithStatusSubresource(&sourcev1.GitRepository{}).Build()
	before := &sourcev1.GitRepository{}
	g.Expect(api.Get(ctx, client.ObjectKeyFromObject(obj), before)).To(Succeed())
	cache := &laggingCache{Client: api}
	runs := 0
	r := &Runner[*sourcev1.GitRepository]{Client: cache, Kind: testKind(func(context.Context, *sourcev1.GitRepository) (outcome.Result, error) {
		runs++
		return outcome.ResultSuccess, nil
	})}
	req := ctrl.Request{NamespacedName: client.ObjectKeyFromObject(obj)}

	_, err := r.Reconcile(ctx, req)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(runs).To(Equal(1))

	cache.stale = before
	res, err := r.Reconcile(ctx, req)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(runs).To(Equal(1), "a run on a cache that has not seen the last run's status does not act on it")
	g.Expect(res.RequeueAfter).To(Equal(cacheCatchUp), "it looks again soon")

	cache.stale = nil
	_, err = r.Reconcile(ctx, req)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(runs).To(Equal(2), "once the cache caught up, the run goes on")
}
