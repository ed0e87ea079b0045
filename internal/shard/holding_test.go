package shard

import (
	"context"
	"slices"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/event"

	kustomizev1 "github.com/windlass-dev/windlass/api/kustomize/v1"
	sourcev1 "github.com/windlass-dev/windlass/api/source/v1"
	"github.com/windlass-dev/windlass/internal/kinds"
	"github.com/windlass-dev/windlass/internal/scheme"
)

// TestBalanceTakes: a member takes the buckets the ring assigns to it that
// have no Lease, or whose holder is no live member, one write each; it
// leaves alone those that a live member holds (that member hands them
// over), and tells OnHeld what it holds.
func TestBalanceTakes(t *testing.T) {
	ns := env.CreateNamespace(t)
	g := NewWithT(t)
	ctx := context.Background()
	m := testMember(g, ns, "me", "me", "other")
	mine := m.assignment.Of("me")
	gone, others := mine[0], mine[1]
	bucketLease(g, ns, gone, "gone")
	bucketLease(g, ns, others, "other")
	readLeases(g, m)
	var told [][]string
	m.OnHeld(func(values []string) { told = append(told, values) })

	m.balance(ctx)
	for _, b := range mine {
		want := "me"
		if b == others {
			want = "other"
		}
		g.Expect(holderOf(g, ns, b)).To(Equal(want), "bucket %d", b)
	}
	g.Expect(m.buckets.held).To(HaveLen(len(mine) - 1))
	g.Expect(m.buckets.held).NotTo(HaveKey(others))
	g.Expect(told).To(HaveLen(1))
	g.Expect(told[0]).To(HaveLen(len(mine) - 1))
	g.Expect(told[0]).To(ContainElement(BucketValue(gone)))
	for _, b := range m.assignment.Of("other") {
		g.Expect(m.HolderOfBucket(b)).To(BeEmpty(), "the buckets of another are not taken")
	}

	// The other hands its bucket over: the member keeps it, with no write.
	readLeases(g, m)
	lease := m.bucketLeases(m.leaseStore.List())[others].DeepCopy()
	lease.Spec.HolderIdentity = ptr.To("me")
	g.Expect(env.Client.Update(ctx, lease)).To(Succeed())
	readLeases(g, m)
	m.balance(ctx)
	g.Expect(m.buckets.held).To(HaveKey(others))
	g.Expect(told).To(HaveLen(2))
	g.Expect(slices.Contains(told[1], BucketValue(others))).To(BeTrue())
}

// handingOver returns a member of the ring of it and another that holds a
// bucket the ring assigns to the other, with a run of it under way (run
// ends it), once a balance has started handing it over; and the namespace
// of the Leases.
func handingOver(t *testing.T, g *WithT, ctx context.Context) (m *Member, ns string, b int, run func()) {
	ns = env.CreateNamespace(t)
	m = testMember(g, ns, "me", "me", "other")
	b = bucketOwnedBy(g, m.assignment, "other")
	bucketLease(g, ns, b, "me")
	readLeases(g, m)
	m.buckets.held[b] = true
	run = m.hold(b)
	g.Expect(run).NotTo(BeNil())
	m.balance(ctx)
	return m, ns, b, run
}

// TestHandOverWaitsForRuns: a member that holds a bucket the ring assigns
// to another starts no run of its objects any more, and writes the new
// holder only once the runs under way have ended.
func TestHandOverWaitsForRuns(t *testing.T) {
	g := NewWithT(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	m, ns, b, run := handingOver(t, g, ctx)
	g.Expect(m.hold(b)).To(BeNil(), "no run starts once the hand-over has")
	g.Expect(m.buckets.releasing[b].drained).NotTo(BeClosed(), "the hand-over waits for the run under way")
	g.Expect(holderOf(g, ns, b)).To(Equal("me"))

	run()
	g.Eventually(func() string { return holderOf(g, ns, b) }, 10*time.Second, 50*time.Millisecond).Should(Equal("other"))
	// The Lease is read back before the writer's own bookkeeping ends: wait
	// for the member to forget the bucket.
	g.Eventually(m.heldValues).ShouldNot(ContainElement(BucketValue(b)))
	g.Expect(m.holdsBucket(b)).To(BeFalse())
}

// TestHandOverCalledOff: a bucket whose hand-over has not been written is
// kept when the ring assigns it back to the member, and its objects are
// woken: while the hand-over lasted their changes passed the member by.
func TestHandOverCalledOff(t *testing.T) {
	g := NewWithT(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	m, ns, b, run := handingOver(t, g, ctx)
	g.Expect(m.holdsBucket(b)).To(BeFalse())
	ks := &kustomizev1.Kustomization{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "changed-meanwhile",
		Labels: map[string]string{BucketLabel: BucketValue(b)}}}
	g.Expect(m.Mine().Update(event.UpdateEvent{ObjectOld: ks, ObjectNew: ks})).To(BeFalse(), "passed by while handed over")
	woken := make(chan event.GenericEvent, 8)
	m.opts.Kinds = []kinds.Kind{kustomizationKind(g)}
	m.subs = map[string]chan event.GenericEvent{"Kustomization": woken}
	m.cache = fake.NewClientBuilder().WithScheme(scheme.New()).WithObjects(ks).Build()

	m.ring = NewRing("me") // the other went
	m.assignment = m.ring.Assign()
	m.balance(ctx)
	g.Expect(m.holdsBucket(b)).To(BeTrue(), "kept")
	g.Expect(m.buckets.releasing).NotTo(HaveKey(b), "the hand-over is called off: once drained, it writes nothing")
	g.Expect(woken).To(Receive(WithTransform(func(e event.GenericEvent) string { return e.Object.GetName() }, Equal(ks.Name))),
		"its objects are woken")
	run()
	g.Expect(m.buckets.runs).NotTo(HaveKey(b))
	g.Expect(holderOf(g, ns, b)).To(Equal("me"))
}

// TestWake: the objects of the buckets a member takes or loses are woken,
// as the cache holds them; those of other buckets are not.
func TestWake(t *testing.T) {
	g := NewWithT(t)
	repo := func(name, bucket string) *sourcev1.GitRepository {
		return &sourcev1.GitRepository{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name,
			Labels: map[string]string{BucketLabel: bucket}}}
	}
	reader := fake.NewClientBuilder().WithScheme(scheme.New()).WithObjects(repo("a", "3"), repo("b", "4"), repo("c", "5"),
		&kustomizev1.Kustomization{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a", Labels: map[string]string{BucketLabel: "3"}}}).Build()
	gitRepository, _ := kinds.Named(sourcev1.GitRepositoryKind)
	m := &Member{opts: Options{Kinds: []kinds.Kind{gitRepository, kustomizationKind(g)}}, cache: reader,
		subs: map[string]chan event.GenericEvent{sourcev1.GitRepositoryKind: make(chan event.GenericEvent, 8),
			"Kustomization": make(chan event.GenericEvent, 8)}}
	m.wake(context.Background(), []int{3, 5})
	var woken []string
	for len(m.subs[sourcev1.GitRepositoryKind]) > 0 {
		woken = append(woken, (<-m.subs[sourcev1.GitRepositoryKind]).Object.GetName())
	}
	g.Expect(woken).To(ConsistOf("a", "c"))
	g.Expect(m.subs["Kustomization"]).To(HaveLen(1), "a kind cached by bucket is woken too, as far as the cache holds it")
}

// TestLostBucketsAreWokenOnce: a bucket handed over or lost is woken once,
// by the next balance; one never held, or held again, is not.
func TestLostBucketsAreWokenOnce(t *testing.T) {
	g := NewWithT(t)
	m := &Member{buckets: newBuckets()}
	m.buckets.held[1], m.buckets.held[2], m.buckets.held[3] = true, true, true
	m.lose(1)
	m.lose(2)
	m.lose(9)
	m.keep(2)
	g.Expect(m.takeLost()).To(ConsistOf(1))
	g.Expect(m.takeLost()).To(BeEmpty(), "once")
}
