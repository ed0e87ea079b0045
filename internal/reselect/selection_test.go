package reselect

import (
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
)

// TestOptions checks that List and Watch ask for the current selector,
// AND'ed with the static one and with the one already in the options, and
// keep every other option.
func TestOptions(t *testing.T) {
	full := metav1.ListOptions{
		TypeMeta:      metav1.TypeMeta{Kind: "ListOptions", APIVersion: "v1"},
		FieldSelector: "metadata.name=x", Watch: true, AllowWatchBookmarks: true,
		ResourceVersion: "42", ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan,
		TimeoutSeconds: new(int64(300)), Limit: 500, Continue: "", SendInitialEvents: new(true),
	}
	tests := []struct {
		name   string
		static string
		values []string
		in     string
		want   string
	}{
		{name: "one value", values: []string{"1"}, want: "bucket in (1)"},
		{name: "values sorted, without duplicates", values: []string{"3", "1", "3"}, want: "bucket in (1,3)"},
		{name: "with a static selector", static: "team=a", values: []string{"2"}, want: "bucket in (2),team=a"},
		{name: "AND'ed with the options'", values: []string{"2"}, in: "tier!=db", want: "tier!=db,bucket in (2)"},
		{name: "no value: nothing", static: "team=a", want: "bucket,!bucket"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			static, err := labels.Parse(tt.static)
			g.Expect(err).NotTo(HaveOccurred())
			s, err := New(static, "bucket", tt.values)
			g.Expect(err).NotTo(HaveOccurred())
			fake := &fakeLW{}
			lw := s.Wrap(fake)
			opts := full
			opts.LabelSelector = tt.in
			want := full
			want.LabelSelector = tt.want

			_, err = lw.List(opts)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(fake.lastList()).To(Equal(want))
			w, err := lw.Watch(opts)
			g.Expect(err).NotTo(HaveOccurred())
			defer w.Stop()
			got, _ := fake.lastWatch()
			g.Expect(got).To(Equal(want))
		})
	}
}

// TestEmptySelectsNothing checks that an empty set of values, and a static
// selector that selects nothing, select no object, also once sent to the
// API server.
func TestEmptySelectsNothing(t *testing.T) {
	g := NewWithT(t)
	s := newSelection(t)
	matchesNothing(g, s.Selector())

	s, err := New(labels.Nothing(), "bucket", []string{"1"})
	g.Expect(err).NotTo(HaveOccurred())
	matchesNothing(g, s.Selector())

	s = newSelection(t, "1")
	g.Expect(s.Selector().Matches(labels.Set{"bucket": "1"})).To(BeTrue())
	g.Expect(s.Set(nil)).To(Succeed())
	matchesNothing(g, s.Selector())
	g.Expect(s.Values()).To(BeEmpty())
}

// TestInvalid checks that invalid keys and values are refused, and that a
// refused Set changes nothing.
func TestInvalid(t *testing.T) {
	g := NewWithT(t)
	_, err := New(nil, "not a key", []string{"1"})
	g.Expect(err).To(HaveOccurred())
	_, err = New(nil, "bucket", []string{"not a value"})
	g.Expect(err).To(HaveOccurred())

	s := newSelection(t, "1")
	g.Expect(s.Set([]string{"2", "-bad"})).NotTo(Succeed())
	g.Expect(s.Values()).To(Equal([]string{"1"}))
	g.Expect(s.Selector().String()).To(Equal("bucket in (1)"))
}

// TestFor checks that For picks objects by Go type.
func TestFor(t *testing.T) {
	g := NewWithT(t)
	s := newSelection(t, "1")
	of := s.For(&corev1.ConfigMap{}, &corev1.Secret{})
	g.Expect(of(&corev1.ConfigMap{})).To(BeIdenticalTo(s))
	g.Expect(of(&corev1.Secret{})).To(BeIdenticalTo(s))
	g.Expect(of(&corev1.Pod{})).To(BeNil())
	g.Expect(of(&unstructured.Unstructured{})).To(BeNil())
}

// TestWatchListSemantics checks that the wrapper supports WatchList
// semantics as the wrapped ListerWatcher does.
func TestWatchListSemantics(t *testing.T) {
	g := NewWithT(t)
	s := newSelection(t, "1")
	type semantics interface{ IsWatchListSemanticsUnSupported() bool }
	for _, unsupported := range []bool{false, true} {
		lw := s.Wrap(&fakeLW{noWatchList: unsupported})
		g.Expect(lw).To(BeAssignableToTypeOf(&listerWatcher{}))
		g.Expect(lw.(semantics).IsWatchListSemanticsUnSupported()).To(Equal(unsupported))
	}
}
