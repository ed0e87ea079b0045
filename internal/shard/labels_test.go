package shard

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kustomizev1 "github.com/windlass-dev/windlass/api/kustomize/v1"
	"github.com/windlass-dev/windlass/api/meta"
	sourcev1 "github.com/windlass-dev/windlass/api/source/v1"
	"github.com/windlass-dev/windlass/internal/kinds"
)

// TestLabel: labelling an object with its bucket adds the reconcilers'
// finalizer in the same request (the holder's first run then needs none of
// its own), keeps the other finalizers, and changes nothing when the object
// changed since it was read. A source, whose kind carries no finalizer, is
// labelled without one.
func TestLabel(t *testing.T) {
	ctx := context.Background()
	ns := env.CreateNamespace(t)
	m, err := NewMember(env.Config, env.Client, env.Client.RESTMapper(),
		Options{Name: "me", Ring: "windlass", Namespace: ns, LeaseDuration: 15 * time.Second})
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	gvr := schema.GroupVersionResource{Group: kustomizev1.GroupVersion.Group, Version: kustomizev1.GroupVersion.Version, Resource: "kustomizations"}
	tests := []struct {
		name           string
		finalizers     []string
		stale          bool
		wantBucket     string
		wantFinalizers []string
	}{
		{name: "unheld, new", wantBucket: "42", wantFinalizers: []string{meta.Finalizer}},
		{name: "with a finalizer of another's", finalizers: []string{"example.com/keep"}, wantBucket: "42",
			wantFinalizers: []string{"example.com/keep", meta.Finalizer}},
		{name: "with the finalizer already", finalizers: []string{meta.Finalizer}, wantBucket: "42", wantFinalizers: []string{meta.Finalizer}},
		{name: "changed since it was read", stale: true, finalizers: []string{"example.com/keep"}, wantFinalizers: []string{"example.com/keep"}},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			ks := newKustomization(g, ns, "app-"+string(rune('a'+i)), nil)
			if len(tt.finalizers) > 0 {
				ks.Finalizers = tt.finalizers
				g.Expect(env.Client.Update(ctx, ks)).To(Succeed())
			}
			read := &metav1.PartialObjectMetadata{}
			read.SetGroupVersionKind(kustomizev1.GroupVersion.WithKind("Kustomization"))
			g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(ks), read)).To(Succeed())
			if tt.stale {
				ks.Annotations = map[string]string{"changed": "after the read"}
				g.Expect(env.Client.Update(ctx, ks)).To(Succeed())
			}
			g.Expect(m.label(ctx, "Kustomization", gvr, read, 42)).To(Succeed())
			got := &kustomizev1.Kustomization{}
			g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(ks), got)).To(Succeed())
			g.Expect(got.Labels[BucketLabel]).To(Equal(tt.wantBucket))
			g.Expect(got.Finalizers).To(Equal(tt.wantFinalizers))
		})
	}
	t.Run("a source", func(t *testing.T) {
		g := NewWithT(t)
		repo := &sourcev1.GitRepository{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "repo"},
			Spec: sourcev1.GitRepositorySpec{URL: "https://example.com/repo.git", Interval: metav1.Duration{Duration: time.Hour}}}
		g.Expect(env.Client.Create(ctx, repo)).To(Succeed())
		read := &metav1.PartialObjectMetadata{}
		read.SetGroupVersionKind(sourcev1.GroupVersion.WithKind(sourcev1.GitRepositoryKind))
		g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(repo), read)).To(Succeed())
		repos := schema.GroupVersionResource{Group: sourcev1.GroupVersion.Group, Version: sourcev1.GroupVersion.Version, Resource: "gitrepositories"}
		g.Expect(m.label(ctx, sourcev1.GitRepositoryKind, repos, read, 7)).To(Succeed())
		got := &sourcev1.GitRepository{}
		g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(repo), got)).To(Succeed())
		g.Expect(got.Labels[BucketLabel]).To(Equal("7"))
		g.Expect(got.Finalizers).To(BeEmpty())
	})
}

// TestLabelsRunSideBySide: a member sends up to labelWorkers labels at
// once (many objects created at once are labelled side by side, not one
// after another), and labels every queued object of a bucket it holds with
// that bucket.
func TestLabelsRunSideBySide(t *testing.T) {
	g := NewWithT(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ns := env.CreateNamespace(t)
	m, err := NewMember(env.Config, env.Client, env.Client.RESTMapper(),
		Options{Name: "me", Ring: "windlass", Namespace: ns, By: ByObject, LeaseDuration: 15 * time.Second, Kinds: []kinds.Kind{kustomizationKind(g)}})
	g.Expect(err).NotTo(HaveOccurred())
	m.ring, m.renewed = NewRing("me"), renewedForTheTest()
	for b := range Buckets {
		m.buckets.held[b] = true
	}
	gate := &labelGate{want: labelWorkers, all: make(chan struct{})}
	m.md = gatedMetadata{Interface: m.md, gate: gate}

	store := cache.NewStore(cache.MetaNamespaceKeyFunc)
	var names []string
	for i := range 2 * labelWorkers {
		ks := newKustomization(g, ns, fmt.Sprintf("app-%d", i), nil)
		read := &metav1.PartialObjectMetadata{}
		read.SetGroupVersionKind(kustomizev1.GroupVersion.WithKind("Kustomization"))
		g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(ks), read)).To(Succeed())
		g.Expect(store.Add(read)).To(Succeed())
		names = append(names, ks.Name)
	}
	m.unlabelled.stores = map[string]cache.Store{"Kustomization": store}
	for _, key := range store.ListKeys() {
		m.unlabelled.Add(labelItem{kind: "Kustomization", key: key})
	}
	go m.runLabels(ctx)

	for _, name := range names {
		g.Eventually(func() string {
			got := &kustomizev1.Kustomization{}
			g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, got)).To(Succeed())
			return got.Labels[BucketLabel]
		}, 30*time.Second, 50*time.Millisecond).Should(Equal(BucketValue(BucketOf(ns+"/"+name))), name)
	}
	g.Expect(gate.most()).To(Equal(labelWorkers), "labels in flight at once")
}

// kustomizationKind returns the registry row of Kustomization.
func kustomizationKind(g Gomega) kinds.Kind {
	k, ok := kinds.Named("Kustomization")
	g.Expect(ok).To(BeTrue())
	return k
}

// labelGate holds each label until want labels are in flight at once (or,
// when they never are, for labelGateBound), and counts the most in flight.
type labelGate struct {
	want int
	all  chan struct{}

	mu       sync.Mutex
	inFlight int
	max      int
	reached  bool
}

// labelGateBound lets a label through when the others it waits for never
// come: the test then fails on the count, not by hanging.
const labelGateBound = 10 * time.Second

func (c *labelGate) enter() {
	c.mu.Lock()
	c.inFlight++
	c.max = max(c.max, c.inFlight)
	if c.inFlight == c.want && !c.reached {
		c.reached = true
		close(c.all)
	}
	c.mu.Unlock()
	select {
	case <-c.all:
	case <-time.After(labelGateBound):
	}
}

func (c *labelGate) leave() {
	c.mu.Lock()
	c.inFlight--
	c.mu.Unlock()
}

func (c *labelGate) most() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.max
}

// gatedMetadata is a metadata client whose patches pass a labelGate.
type gatedMetadata struct {
	metadata.Interface
	gate *labelGate
}

func (g gatedMetadata) Resource(gvr schema.GroupVersionResource) metadata.Getter {
	return gatedGetter{Getter: g.Interface.Resource(gvr), gate: g.gate}
}

type gatedGetter struct {
	metadata.Getter
	gate *labelGate
}

func (g gatedGetter) Namespace(ns string) metadata.ResourceInterface {
	return gatedResource{ResourceInterface: g.Getter.Namespace(ns), gate: g.gate}
}

type gatedResource struct {
	metadata.ResourceInterface
	gate *labelGate
}

func (r gatedResource) Patch(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions,
	subresources ...string) (*metav1.PartialObjectMetadata, error) {
	r.gate.enter()
	defer r.gate.leave()
	return r.ResourceInterface.Patch(ctx, name, pt, data, opts, subresources...)
}
