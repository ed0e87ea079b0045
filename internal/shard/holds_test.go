package shard

import (
	"context"
	"fmt"
	"os"
	"slices"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"

	kustomizev1 "github.com/windlass-dev/windlass/api/kustomize/v1"
	"github.com/windlass-dev/windlass/internal/testutil/testenv"
)

var env *testenv.Environment

func TestMain(m *testing.M) { os.Exit(testenv.Run(m, &env)) }

// newKustomization creates a Kustomization called name in ns, labelled
// with labels.
func newKustomization(g Gomega, ns, name string, labels map[string]string) *kustomizev1.Kustomization {
	ks := &kustomizev1.Kustomization{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels},
		Spec: kustomizev1.KustomizationSpec{Interval: metav1.Duration{Duration: time.Hour}, Prune: true,
			SourceRef: kustomizev1.CrossNamespaceSourceReference{Kind: "GitRepository", Name: "repo"}}}
	g.Expect(env.Client.Create(context.Background(), ks)).To(Succeed())
	return ks
}

// testMember returns the member called name of the ring of members, whose
// Leases live in namespace ns, with the ring known and no bucket held.
func testMember(g Gomega, ns, name string, members ...string) *Member {
	m, err := NewMember(env.Config, nil, nil, Options{Name: name, Ring: "windlass", Namespace: ns, By: ByObject,
		LeaseDuration: 15 * time.Second})
	g.Expect(err).NotTo(HaveOccurred())
	m.ring = NewRing(members...)
	m.assignment, m.ready = m.ring.Assign(), true
	m.leaseStore = cache.NewStore(cache.MetaNamespaceKeyFunc)
	m.renewed = renewedForTheTest()
	return m
}

// renewedForTheTest is when the Lease of a test's member was renewed: an
// hour ahead, so that however slowly the test runs the member does not
// lapse (see Member.reconciles) unless the test says so.
func renewedForTheTest() time.Time { return time.Now().Add(time.Hour) }

// readLeases fills the member's store of Leases from the API server, as
// its informer would.
func readLeases(g Gomega, m *Member) {
	var list coordinationv1.LeaseList
	g.Expect(env.Client.List(context.Background(), &list, client.InNamespace(m.leases.namespace))).To(Succeed())
	items := make([]any, 0, len(list.Items))
	for i := range list.Items {
		items = append(items, &list.Items[i])
	}
	g.Expect(m.leaseStore.Replace(items, "")).To(Succeed())
}

// bucketLease creates the Lease of bucket b of ring windlass in ns, held by
// holder.
func bucketLease(g Gomega, ns string, b int, holder string) {
	g.Expect(env.Client.Create(context.Background(), &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: BucketLeaseName("windlass", b), Namespace: ns,
			Labels: map[string]string{RingLabel: "windlass", BucketLabel: BucketValue(b)}},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To(holder)},
	})).To(Succeed())
}

// holderOf returns the holder that the Lease of bucket b in ns names.
func holderOf(g Gomega, ns string, b int) string {
	var lease coordinationv1.Lease
	g.Expect(env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: BucketLeaseName("windlass", b)}, &lease)).To(Succeed())
	return ptr.Deref(lease.Spec.HolderIdentity, "")
}

// bucketOwnedBy returns a bucket that a assigns to member.
func bucketOwnedBy(g Gomega, a Assignment, member string) int {
	buckets := a.Of(member)
	g.Expect(buckets).NotTo(BeEmpty(), "no bucket of %s", member)
	return buckets[0]
}

// nameInBucket returns a name of an object of namespace ns, hashed by
// object, that falls in bucket b (other than taken).
func nameInBucket(g Gomega, ns string, b int, taken ...string) string {
	for i := range 100000 {
		name := fmt.Sprintf("app-%d", i)
		if BucketOf(ns+"/"+name) == b && !slices.Contains(taken, name) {
			return name
		}
	}
	g.Expect(false).To(BeTrue(), "no name in bucket %d", b)
	return ""
}

func TestHold(t *testing.T) {
	ns := env.CreateNamespace(t)
	g := NewWithT(t)
	m := testMember(g, ns, "me", "me", "other")
	mine, releasing, others := 3, 4, 5
	m.buckets.held[mine], m.buckets.held[releasing] = true, true
	m.buckets.releasing[releasing] = &release{drained: make(chan struct{})}
	tests := []struct {
		name string
		// bucket is the object's label (-1: none), in is the bucket its
		// key gives.
		bucket, in int
		wantHeld   bool
		wantBucket string
	}{
		{name: "no bucket yet", bucket: -1, in: mine, wantBucket: ""},
		{name: "in a held bucket", bucket: mine, in: mine, wantHeld: true, wantBucket: "3"},
		{name: "in another's bucket", bucket: others, in: others, wantBucket: "5"},
		{name: "in a bucket being handed over", bucket: releasing, in: releasing, wantBucket: "4"},
		{name: "moved by its key, from a held bucket: relabelled", bucket: mine, in: others, wantBucket: "5"},
		{name: "moved by its key, from another's bucket: left to it", bucket: others, in: mine, wantBucket: "5"},
	}
	var names []string
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			name := nameInBucket(g, ns, tt.in, names...)
			names = append(names, name)
			labels := map[string]string{}
			if tt.bucket >= 0 {
				labels[BucketLabel] = BucketValue(tt.bucket)
			}
			ks := newKustomization(g, ns, name, labels)
			done, err := m.Hold(context.Background(), env.Client, "Kustomization", ks.DeepCopy())
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(done != nil).To(Equal(tt.wantHeld))
			stored := &kustomizev1.Kustomization{}
			g.Expect(env.Client.Get(context.Background(), client.ObjectKeyFromObject(ks), stored)).To(Succeed())
			g.Expect(stored.Labels[BucketLabel]).To(Equal(tt.wantBucket))
			if done != nil {
				g.Expect(m.buckets.runs[tt.bucket]).To(Equal(1), "the run is counted until it ends")
				done()
				done()
				g.Expect(m.buckets.runs).NotTo(HaveKey(tt.bucket), "ended once, however often it is told")
			}
		})
	}
}

func TestRelabelIsConditional(t *testing.T) {
	ns := env.CreateNamespace(t)
	g := NewWithT(t)
	m := testMember(g, ns, "me", "me")
	m.buckets.held[7] = true
	ks := newKustomization(g, ns, nameInBucket(g, ns, 9), map[string]string{BucketLabel: "8"})
	stale := ks.DeepCopy()
	stale.Labels[BucketLabel] = "7"
	done, err := m.Hold(context.Background(), env.Client, "Kustomization", stale)
	g.Expect(err).NotTo(HaveOccurred(), "a failed move is not an error: the object is not in the held bucket any more")
	g.Expect(done).To(BeNil())
	stored := &kustomizev1.Kustomization{}
	g.Expect(env.Client.Get(context.Background(), client.ObjectKeyFromObject(ks), stored)).To(Succeed())
	g.Expect(stored.Labels[BucketLabel]).To(Equal("8"), "the move is conditional on the bucket read")
}

func TestPredicates(t *testing.T) {
	g := NewWithT(t)
	m := &Member{opts: Options{Name: "me", LeaseDuration: 15 * time.Second}, buckets: newBuckets(), renewed: renewedForTheTest()}
	m.buckets.held[1] = true
	at := func(bucket, key string) *kustomizev1.Kustomization {
		return &kustomizev1.Kustomization{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{BucketLabel: bucket, KeyLabel: key}}}
	}
	mine, moves := m.Mine(), m.Moves()
	g.Expect(mine.Create(event.CreateEvent{Object: at("1", "")})).To(BeTrue())
	g.Expect(mine.Create(event.CreateEvent{Object: at("2", "")})).To(BeFalse())
	g.Expect(mine.Create(event.CreateEvent{Object: at("", "")})).To(BeFalse(), "no bucket yet")
	g.Expect(mine.Update(event.UpdateEvent{ObjectOld: at("1", ""), ObjectNew: at("2", "")})).To(BeTrue(), "moved away")
	g.Expect(mine.Update(event.UpdateEvent{ObjectOld: at("", ""), ObjectNew: at("1", "")})).To(BeTrue(), "labelled")
	g.Expect(mine.Generic(event.GenericEvent{Object: at("1", "")})).To(BeTrue())
	g.Expect(mine.Delete(event.DeleteEvent{Object: at("2", "")})).To(BeFalse())
	g.Expect(moves.Update(event.UpdateEvent{ObjectOld: at("", ""), ObjectNew: at("1", "")})).To(BeTrue())
	g.Expect(moves.Update(event.UpdateEvent{ObjectOld: at("1", "a"), ObjectNew: at("1", "b")})).To(BeTrue())
	g.Expect(moves.Update(event.UpdateEvent{ObjectOld: at("1", "a"), ObjectNew: at("1", "a")})).To(BeFalse())
	m.buckets.releasing[1] = &release{drained: make(chan struct{})}
	g.Expect(mine.Create(event.CreateEvent{Object: at("1", "")})).To(BeFalse(), "a bucket being handed over is not held")
}

func TestKey(t *testing.T) {
	g := NewWithT(t)
	obj := &metav1.ObjectMeta{Namespace: "team-a", Name: "app"}
	g.Expect(Key(obj, ByNamespace)).To(Equal("team-a"))
	g.Expect(Key(obj, ByObject)).To(Equal("team-a/app"))
	obj.Labels = map[string]string{KeyLabel: "shard1"}
	g.Expect(Key(obj, ByNamespace)).To(Equal("key:shard1"))
	g.Expect(Key(obj, ByObject)).To(Equal("key:shard1"))
	_, err := ParseBy("kind")
	g.Expect(err).To(MatchError(ContainSubstring(`unknown sharding "kind"`)))
	g.Expect(CheckMemberName("windlass-7d9f8c6b5-x2k4j")).To(Succeed())
	g.Expect(CheckMemberName("")).To(MatchError(ContainSubstring("empty")))
	g.Expect(CheckMemberName("Upper_Case.ok")).To(MatchError(ContainSubstring("Lease name")))
}

func TestReports(t *testing.T) {
	g := NewWithT(t)
	ring := NewRing("me", "other")
	m := &Member{opts: Options{Name: "me", By: ByObject, LeaseDuration: 15 * time.Second}, ring: ring, assignment: ring.Assign(), ready: true,
		buckets: newBuckets(), renewed: renewedForTheTest()}
	mineB, othersB := bucketOwnedBy(g, m.assignment, "me"), bucketOwnedBy(g, m.assignment, "other")
	m.buckets.held[mineB] = true
	obj := func(name string, bucket int) *kustomizev1.Kustomization {
		o := &kustomizev1.Kustomization{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}}
		if bucket >= 0 {
			o.Labels = map[string]string{BucketLabel: BucketValue(bucket)}
		}
		return o
	}
	mine, others := nameInBucket(g, "ns", mineB), nameInBucket(g, "ns", othersB)
	g.Expect(m.Reports("Kustomization", obj(mine, mineB))).To(BeTrue())
	g.Expect(m.Reports("Kustomization", obj(others, othersB))).To(BeFalse())
	g.Expect(m.Reports("Kustomization", obj(mine, -1))).To(BeFalse(), "no bucket yet")
	g.Expect(m.Reports("Alert", obj(mine, -1))).To(BeTrue(), "an Alert that the ring gives to this member")
	g.Expect(m.Reports("Alert", obj(others, -1))).To(BeFalse())

	// Owns asks the assignment only, whoever holds the bucket now.
	g.Expect(m.Owns("GitRepository", obj(mine, othersB))).To(BeTrue(), "the ring gives its bucket to this member")
	g.Expect(m.Owns("GitRepository", obj(others, mineB))).To(BeFalse(), "labelled with a held bucket, but its key gives another")
}

func TestImageReflectorKindsAreHeldAsOne(t *testing.T) {
	g := NewWithT(t)
	m := &Member{opts: Options{Name: "a", By: ByObject}}
	buckets := map[int]bool{}
	for i := range 50 {
		for _, kind := range []string{"ImageRepository", "ImagePolicy"} {
			obj := &metav1.ObjectMeta{Namespace: fmt.Sprintf("team-%d", i), Name: "app"}
			buckets[BucketOf(m.keyOf(kind, obj))] = true
		}
	}
	g.Expect(buckets).To(HaveLen(1), "an ImagePolicy is held with the ImageRepository whose tags it reads")
	spread := map[int]bool{}
	for i := range 50 {
		spread[BucketOf(m.keyOf("Kustomization", &metav1.ObjectMeta{Namespace: fmt.Sprintf("team-%d", i), Name: "app"}))] = true
	}
	g.Expect(len(spread)).To(BeNumerically(">", 40))
}
