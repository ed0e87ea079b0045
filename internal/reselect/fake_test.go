package reselect

import (
	"sync"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
)

// fakeLW is a ListerWatcher (without context) that records the options it
// is called with and answers empty ConfigMap lists and fake watches.
type fakeLW struct {
	mu      sync.Mutex
	lists   []metav1.ListOptions
	watchOp []metav1.ListOptions
	watches []*watch.FakeWatcher
	// opening, when set, runs in Watch before it answers.
	opening func()
	// noWatchList makes it tell it does not support WatchList semantics.
	noWatchList bool
	// items are what List answers; listErr, when set, is its error.
	items   []corev1.ConfigMap
	listErr error
}

func (f *fakeLW) List(opts metav1.ListOptions) (runtime.Object, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lists = append(f.lists, opts)
	if f.listErr != nil {
		return nil, f.listErr
	}
	return &corev1.ConfigMapList{ListMeta: metav1.ListMeta{ResourceVersion: "1"}, Items: f.items}, nil
}

func (f *fakeLW) Watch(opts metav1.ListOptions) (watch.Interface, error) {
	if f.opening != nil {
		f.opening()
	}
	w := watch.NewFake()
	f.mu.Lock()
	defer f.mu.Unlock()
	f.watchOp = append(f.watchOp, opts)
	f.watches = append(f.watches, w)
	return w, nil
}

func (f *fakeLW) IsWatchListSemanticsUnSupported() bool { return f.noWatchList }

// lastList returns the options of the last List.
func (f *fakeLW) lastList() metav1.ListOptions {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.lists[len(f.lists)-1]
}

// lastWatch returns the options and the watch of the last Watch.
func (f *fakeLW) lastWatch() (metav1.ListOptions, *watch.FakeWatcher) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.watchOp[len(f.watchOp)-1], f.watches[len(f.watches)-1]
}

// watchCount returns how many watches were opened.
func (f *fakeLW) watchCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.watches)
}

// listedSelectors returns the label selectors of the Lists.
func (f *fakeLW) listedSelectors() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for _, o := range f.lists {
		out = append(out, o.LabelSelector)
	}
	return out
}

// newSelection returns a Selection of key "bucket" without static part.
func newSelection(t *testing.T, values ...string) *Selection {
	t.Helper()
	s, err := New(nil, "bucket", values)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// initial are the options of a watch that sends the initial state.
func initial() metav1.ListOptions {
	return metav1.ListOptions{SendInitialEvents: new(true), AllowWatchBookmarks: true,
		ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan}
}

// matchesNothing expects sel, and its string form as the API server
// parses it, to match none of a few label sets.
func matchesNothing(g Gomega, sel labels.Selector) {
	parsed, err := labels.Parse(sel.String())
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(sel.String()).NotTo(BeEmpty())
	for _, set := range []labels.Set{{}, {"bucket": "1"}, {"bucket": ""}, {"team": "a"}} {
		g.Expect(sel.Matches(set)).To(BeFalse(), set.String())
		g.Expect(parsed.Matches(set)).To(BeFalse(), set.String())
	}
}
