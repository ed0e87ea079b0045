package reselect

import (
	"context"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	toolscache "k8s.io/client-go/tools/cache"
)

// TestSetSameSet checks that setting the same set, in another order and
// with duplicates, keeps the open watches.
func TestSetSameSet(t *testing.T) {
	g := NewWithT(t)
	s := newSelection(t, "1", "2")
	fake := &fakeLW{}
	w, err := s.Wrap(fake).Watch(initial())
	g.Expect(err).NotTo(HaveOccurred())
	defer w.Stop()

	g.Expect(s.Set([]string{"2", "1", "2"})).To(Succeed())
	_, inner := fake.lastWatch()
	go inner.Add(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a"}})
	var ev watch.Event
	g.Eventually(w.ResultChan()).Should(Receive(&ev))
	g.Expect(ev.Type).To(Equal(watch.Added))
	g.Expect(inner.IsStopped()).To(BeFalse())
}

// TestSetEndsWatches checks that a change ends every open watch with a 410
// Expired event, and that the next ones use the new selector.
func TestSetEndsWatches(t *testing.T) {
	g := NewWithT(t)
	s := newSelection(t, "1")
	fake := &fakeLW{}
	lw := s.Wrap(fake)
	var ws []watch.Interface
	for range 2 {
		w, err := lw.Watch(initial())
		g.Expect(err).NotTo(HaveOccurred())
		ws = append(ws, w)
	}

	g.Expect(s.Set([]string{"2", "3"})).To(Succeed())
	for i, w := range ws {
		expectExpired(g, w)
		g.Expect(fake.watches[i].IsStopped()).To(BeTrue())
		w.Stop()
	}
	g.Eventually(s.trackedWatches).Should(BeZero())

	w, err := lw.Watch(initial())
	g.Expect(err).NotTo(HaveOccurred())
	defer w.Stop()
	opts, _ := fake.lastWatch()
	g.Expect(opts.LabelSelector).To(Equal("bucket in (2,3)"))
}

// TestResumeAfterSet checks that a Watch resuming from a resource version,
// or a List continuing a paginated one, fails with a 410 Expired error when
// the state it builds on was listed with an older selector.
func TestResumeAfterSet(t *testing.T) {
	g := NewWithT(t)
	s := newSelection(t, "1")
	fake := &fakeLW{}
	lw := s.Wrap(fake)
	resume := metav1.ListOptions{ResourceVersion: "10"}
	next := metav1.ListOptions{Continue: "token", Limit: 1}
	_, err := lw.List(metav1.ListOptions{Limit: 1})
	g.Expect(err).NotTo(HaveOccurred())
	_, err = lw.List(next)
	g.Expect(err).NotTo(HaveOccurred())
	w, err := lw.Watch(resume)
	g.Expect(err).NotTo(HaveOccurred())
	w.Stop()

	g.Expect(s.Set([]string{"2"})).To(Succeed())
	_, err = lw.List(next)
	g.Expect(apierrors.IsResourceExpired(err)).To(BeTrue(), "continue: %v", err)
	_, err = lw.Watch(resume)
	g.Expect(apierrors.IsResourceExpired(err)).To(BeTrue(), "resume: %v", err)

	_, err = lw.List(metav1.ListOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	w, err = lw.Watch(resume)
	g.Expect(err).NotTo(HaveOccurred())
	w.Stop()
	g.Expect(fake.listedSelectors()).To(Equal([]string{"bucket in (1)", "bucket in (1)", "bucket in (2)"}))
}

// TestSetWhileOpening checks that a watch whose selector changes while it
// opens does not keep the old selector.
func TestSetWhileOpening(t *testing.T) {
	g := NewWithT(t)
	s := newSelection(t, "1")
	fake := &fakeLW{}
	fake.opening = func() { g.Expect(s.Set([]string{"2"})).To(Succeed()) }
	_, err := s.Wrap(fake).Watch(initial())
	g.Expect(apierrors.IsResourceExpired(err)).To(BeTrue(), "%v", err)
	_, inner := fake.lastWatch()
	g.Expect(inner.IsStopped()).To(BeTrue())
	g.Expect(s.trackedWatches()).To(BeZero())
}

// TestStop checks that Stop may be called several times, closes the
// channel, stops the watch it forwards and forgets the watch.
func TestStop(t *testing.T) {
	g := NewWithT(t)
	s := newSelection(t, "1")
	fake := &fakeLW{}
	w, err := s.Wrap(fake).Watch(initial())
	g.Expect(err).NotTo(HaveOccurred())
	w.Stop()
	w.Stop()
	g.Eventually(w.ResultChan()).Should(BeClosed())
	_, inner := fake.lastWatch()
	g.Expect(inner.IsStopped()).To(BeTrue())
	g.Eventually(s.trackedWatches).Should(BeZero())
	g.Expect(s.Set([]string{"2"})).To(Succeed())
	w.Stop()
}

// TestInnerEnds checks that the proxy ends when the watch it forwards ends.
func TestInnerEnds(t *testing.T) {
	g := NewWithT(t)
	s := newSelection(t, "1")
	fake := &fakeLW{}
	w, err := s.Wrap(fake).Watch(initial())
	g.Expect(err).NotTo(HaveOccurred())
	_, inner := fake.lastWatch()
	inner.Stop()
	g.Eventually(w.ResultChan()).Should(BeClosed())
	g.Eventually(s.trackedWatches).Should(BeZero())
	w.Stop()
}

// TestConcurrent opens, stops and ends watches, lists and sets from many
// goroutines at once, for the race detector; every watch must end.
func TestConcurrent(t *testing.T) {
	g := NewWithT(t)
	s := newSelection(t, "0")
	lw := s.Wrap(&fakeLW{})
	var setters, watchers sync.WaitGroup
	setsDone := make(chan struct{})
	for i := range 8 {
		setters.Go(func() { _ = s.Set([]string{string(rune('a' + i))}) })
		setters.Go(func() { _, _ = lw.List(metav1.ListOptions{}) })
		watchers.Go(func() {
			if w, err := lw.Watch(initial()); err == nil {
				drain(w, i%2 == 0, setsDone)
			}
		})
	}
	setters.Go(func() {
		for range 100 {
			_ = s.Set([]string{"x"})
			_ = s.Set([]string{"y"})
		}
	})
	setters.Wait()
	close(setsDone)
	watchers.Wait()
	g.Eventually(s.trackedWatches).Should(BeZero())
}

// drain reads w until its channel closes; it stops w at once when early,
// else once stop closes.
func drain(w watch.Interface, early bool, stop <-chan struct{}) {
	if early {
		w.Stop()
	}
	for {
		select {
		case _, ok := <-w.ResultChan():
			if !ok {
				w.Stop()
				return
			}
		case <-stop:
			w.Stop()
			stop = nil
		}
	}
}

// TestContext checks that the context reaches the wrapped ListerWatcher.
func TestContext(t *testing.T) {
	g := NewWithT(t)
	type key struct{}
	ctx := context.WithValue(context.Background(), key{}, "mine")
	var seen []any
	lw := newSelection(t, "1").Wrap(&toolscache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, _ metav1.ListOptions) (runtime.Object, error) {
			seen = append(seen, ctx.Value(key{}))
			return &corev1.ConfigMapList{}, nil
		},
		WatchFuncWithContext: func(ctx context.Context, _ metav1.ListOptions) (watch.Interface, error) {
			seen = append(seen, ctx.Value(key{}))
			return watch.NewFake(), nil
		},
	}).(toolscache.ListerWatcherWithContext)
	_, err := lw.ListWithContext(ctx, metav1.ListOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	w, err := lw.WatchWithContext(ctx, initial())
	g.Expect(err).NotTo(HaveOccurred())
	w.Stop()
	g.Expect(seen).To(Equal([]any{"mine", "mine"}))
}

// TestNewInformer checks that the hook wraps the ListerWatcher of the
// chosen kinds only, and that a reflector relists after Set.
func TestNewInformer(t *testing.T) {
	g := NewWithT(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s := newSelection(t, "1")
	hook := NewInformer(s.For(&corev1.ConfigMap{}))
	chosen, other := &fakeLW{noWatchList: true}, &fakeLW{noWatchList: true}
	for lw, obj := range map[*fakeLW]runtime.Object{chosen: &corev1.ConfigMap{}, other: &corev1.Secret{}} {
		inf := hook(lw, obj, time.Hour, toolscache.Indexers{})
		go inf.RunWithContext(ctx)
		g.Eventually(inf.HasSynced).Should(BeTrue())
	}
	g.Eventually(chosen.watchCount).Should(Equal(1))
	g.Expect(chosen.listedSelectors()).To(Equal([]string{"bucket in (1)"}))
	g.Expect(other.listedSelectors()).To(Equal([]string{""}))

	g.Expect(s.Set([]string{"2"})).To(Succeed())
	g.Eventually(chosen.listedSelectors).WithTimeout(10 * time.Second).
		Should(Equal([]string{"bucket in (1)", "bucket in (2)"}))
}

// trackedWatches returns how many watches s would end on Set.
func (s *Selection) trackedWatches() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.watches)
}
