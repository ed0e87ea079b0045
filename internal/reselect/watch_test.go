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

// TestSetEndsWatches checks that a change ends every open watch without an
// error event, and that the next ones use the new selector.
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
		g.Eventually(w.ResultChan()).Should(BeClosed())
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

// TestAddingValues checks that a change that only adds values ends the
// open watches without an error, and that a Watch resuming from a resource
// version then sends the objects of the added values as they were at that
// version, listed with them alone, a Bookmark of that version, then the
// events of the watch of every value.
func TestAddingValues(t *testing.T) {
	g := NewWithT(t)
	s := newSelection(t, "1")
	fake := &fakeLW{items: []corev1.ConfigMap{
		{ObjectMeta: metav1.ObjectMeta{Name: "a", ResourceVersion: "7"}},
		{ObjectMeta: metav1.ObjectMeta{Name: "b", ResourceVersion: "9"}},
	}}
	lw := s.Wrap(fake)
	_, err := lw.List(metav1.ListOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	w, err := lw.Watch(metav1.ListOptions{ResourceVersion: "1"})
	g.Expect(err).NotTo(HaveOccurred())
	defer w.Stop()

	g.Expect(s.Set([]string{"1", "3", "2"})).To(Succeed())
	g.Eventually(w.ResultChan()).Should(BeClosed(), "ended without an error event")
	_, inner := fake.lastWatch()
	g.Expect(inner.IsStopped()).To(BeTrue())

	w, err = lw.Watch(metav1.ListOptions{ResourceVersion: "10", AllowWatchBookmarks: true})
	g.Expect(err).NotTo(HaveOccurred())
	defer w.Stop()
	g.Expect(fake.lastList()).To(Equal(metav1.ListOptions{LabelSelector: "bucket in (2,3)", ResourceVersion: "10",
		ResourceVersionMatch: metav1.ResourceVersionMatchExact}))
	opts, inner := fake.lastWatch()
	g.Expect(opts).To(Equal(metav1.ListOptions{LabelSelector: "bucket in (1,2,3)", ResourceVersion: "10", AllowWatchBookmarks: true}))
	go inner.Modify(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a", ResourceVersion: "11"}})
	g.Expect(receive(g, w, 4)).To(Equal([]string{"ADDED a 7", "ADDED b 9", "BOOKMARK b 10", "MODIFIED a 11"}))

	// Resuming again from the state the gain made needs no list.
	w.Stop()
	w, err = lw.Watch(metav1.ListOptions{ResourceVersion: "11"})
	g.Expect(err).NotTo(HaveOccurred())
	w.Stop()
	g.Expect(fake.lists).To(HaveLen(2))
}

// receive returns the next n events of w, each as "TYPE name
// resourceVersion" of its ConfigMap.
func receive(g Gomega, w watch.Interface, n int) []string {
	var got []string
	for range n {
		var ev watch.Event
		g.Eventually(w.ResultChan()).Should(Receive(&ev))
		cm := ev.Object.(*corev1.ConfigMap)
		got = append(got, string(ev.Type)+" "+cm.Name+" "+cm.ResourceVersion)
	}
	return got
}

// TestRemovingValues checks that a Watch resuming after values were
// removed and others added first sends the objects of the removed ones as
// deleted and those of the added ones as added, each listed with its
// values alone at the version it resumes from; and that it fails with a
// 410 Expired error, as the reflector's own List would, when a List fails.
func TestRemovingValues(t *testing.T) {
	g := NewWithT(t)
	s := newSelection(t, "1", "2")
	fake := &fakeLW{items: []corev1.ConfigMap{{ObjectMeta: metav1.ObjectMeta{Name: "a", ResourceVersion: "7"}}}}
	lw := s.Wrap(fake)
	_, err := lw.List(metav1.ListOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	resume := metav1.ListOptions{ResourceVersion: "10"}

	g.Expect(s.Set([]string{"1", "3"})).To(Succeed())
	g.Expect(s.Set([]string{"3", "4"})).To(Succeed())
	w, err := lw.Watch(resume)
	g.Expect(err).NotTo(HaveOccurred())
	defer w.Stop()
	g.Expect(fake.listedSelectors()).To(Equal([]string{"bucket in (1,2)", "bucket in (1,2)", "bucket in (3,4)"}))
	g.Expect(receive(g, w, 3)).To(Equal([]string{"DELETED a 7", "ADDED a 7", "BOOKMARK a 10"}))
	opts, _ := fake.lastWatch()
	g.Expect(opts.LabelSelector).To(Equal("bucket in (3,4)"))

	g.Expect(s.Set([]string{"4"})).To(Succeed())
	fake.listErr = apierrors.NewResourceExpired("too old resource version")
	_, err = lw.Watch(resume)
	g.Expect(apierrors.IsResourceExpired(err)).To(BeTrue(), "%v", err)
	g.Expect(fake.watchCount()).To(Equal(1))
}

// TestResumeAfterSet checks that a List continuing a paginated one fails
// with a 410 Expired error when the selector changed since its first page,
// and that a Watch resuming from a resource version after a change lists
// what the change added, and only that.
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

	_, err = lw.List(metav1.ListOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	w, err = lw.Watch(resume)
	g.Expect(err).NotTo(HaveOccurred())
	w.Stop()
	g.Expect(s.Set([]string{"2", "5"})).To(Succeed())
	w, err = lw.Watch(resume)
	g.Expect(err).NotTo(HaveOccurred())
	w.Stop()
	g.Expect(fake.listedSelectors()).To(Equal([]string{"bucket in (1)", "bucket in (1)", "bucket in (2)", "bucket in (5)"}))
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
		watchers.Go(func() {
			if w, err := lw.Watch(metav1.ListOptions{ResourceVersion: "5"}); err == nil {
				drain(w, i%2 == 1, setsDone)
			}
		})
	}
	setters.Go(func() {
		for range 100 {
			_ = s.Set([]string{"x"})
			_ = s.Set([]string{"x", "y"})
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
// chosen kinds only, and that a reflector lists what a Set adds.
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
	g.Eventually(chosen.listedSelectors).WithTimeout(10 * time.Second).Should(ContainElement("bucket in (2)"))
	g.Expect(other.listedSelectors()).To(Equal([]string{""}))
}

// trackedWatches returns how many watches s would end on Set.
func (s *Selection) trackedWatches() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.watches)
}
