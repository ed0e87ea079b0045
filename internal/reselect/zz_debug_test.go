package reselect_test

import (
	"context"
	"testing"
	"sync/atomic"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	"github.com/windlass-dev/windlass/internal/reselect"
)

var watches atomic.Int32
type logLW struct{ t *testing.T; in toolscache.ListerWatcherWithContext; start time.Time }
func (l *logLW) List(o metav1.ListOptions) (runtime.Object, error) { return l.ListWithContext(context.Background(), o) }
func (l *logLW) Watch(o metav1.ListOptions) (watch.Interface, error) { return l.WatchWithContext(context.Background(), o) }
func (l *logLW) ListWithContext(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
	l.t.Logf("%v LIST %+v", time.Since(l.start), o); return l.in.ListWithContext(ctx, o) }
func (l *logLW) WatchWithContext(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
	watches.Add(1); l.t.Logf("%v WATCH sel=%q rv=%q initial=%v", time.Since(l.start), o.LabelSelector, o.ResourceVersion, o.SendInitialEvents != nil); return l.in.WatchWithContext(ctx, o) }

func TestDebug(t *testing.T) {
	g := NewWithT(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ns := env.CreateNamespace(t)
	sel, _ := reselect.New(nil, "bucket", []string{"1"})
	start := time.Now()
	c, err := cache.New(env.Config, cache.Options{Scheme: env.Scheme, DefaultNamespaces: map[string]cache.Config{ns: {}},
		NewInformer: func(lw toolscache.ListerWatcher, o runtime.Object, d time.Duration, i toolscache.Indexers) toolscache.SharedIndexInformer {
			return toolscache.NewSharedIndexInformer(&logLW{t, toolscache.ToListerWatcherWithContext(sel.Wrap(lw)), start}, o, d, i)
		}})
	g.Expect(err).NotTo(HaveOccurred())
	_, err = c.GetInformer(ctx, &corev1.ConfigMap{})
	g.Expect(err).NotTo(HaveOccurred())
	go func() { _ = c.Start(ctx) }()
	c.WaitForCacheSync(ctx)
	for i, v := range []string{"2", "3", "4", "5", "6", "7", "8", "9"} {
		t.Logf("%v SET %d", time.Since(start), i)
		sel.Set([]string{v})
		want := int(watches.Load()) + 1
		g.Eventually(func() int { return int(watches.Load()) }).WithTimeout(3 * time.Minute).Should(Equal(want))
	}
}
