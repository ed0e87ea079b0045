package shard

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/event"

	kustomizev1 "github.com/windlass-dev/windlass/api/kustomize/v1"
)

// TestAMemberPastItsRenewDeadlineReconcilesNothing: a member whose last
// renewal started longer ago than its renew deadline may be counted gone
// by the others: it starts no run and passes no event, even of a bucket it
// still believes it holds, and a renewal that succeeds then does not bring
// it back (it dropped events meanwhile): it is told to stop.
func TestAMemberPastItsRenewDeadlineReconcilesNothing(t *testing.T) {
	g := NewWithT(t)
	m := testMember(g, env.CreateNamespace(t), "me", "me", "other")
	b := bucketOwnedBy(g, m.assignment, "me")
	m.buckets.held[b] = true
	ks := &kustomizev1.Kustomization{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{BucketLabel: BucketValue(b)}}}
	done := m.hold(b)
	g.Expect(done).NotTo(BeNil(), "renewed in time")
	done()

	past := time.Now().Add(-m.renewDeadline() - time.Second)
	m.renewed = past
	g.Expect(m.hold(b)).To(BeNil())
	g.Expect(m.holdsBucket(b)).To(BeFalse())
	g.Expect(m.Mine().Generic(event.GenericEvent{Object: ks})).To(BeFalse())
	g.Expect(m.renewAndRecord(context.Background())).To(MatchError(errLapsed), "a renewal that comes too late")
	g.Expect(m.renewed).To(Equal(past), "leaves it lapsed: it stops")

	m.renewed = time.Now()
	g.Expect(m.Mine().Generic(event.GenericEvent{Object: ks})).To(BeTrue())
}

// TestAPausedMemberStops: a member whose renew loop did not run for longer
// than its renew deadline (the process was stopped, frozen or starved)
// stops at its next tick, though its Lease could still be renewed: the
// others may have taken its buckets meanwhile. The pause is its last
// renewal moved back past the deadline, as a paused process finds it.
func TestAPausedMemberStops(t *testing.T) {
	g := NewWithT(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var lost atomic.Bool
	m, err := NewMember(env.Config, nil, nil, Options{Name: "paused", Ring: "windlass", Namespace: env.CreateNamespace(t),
		LeaseDuration: 6 * time.Second, OnLost: func() { lost.Store(true) }})
	g.Expect(err).NotTo(HaveOccurred())
	stopped := make(chan error, 1)
	go func() { stopped <- m.Start(ctx) }()
	g.Eventually(func() []string { return m.Ring().Members() }, 10*time.Second).Should(Equal([]string{"paused"}))
	g.Consistently(stopped, 2*m.renewEvery()).ShouldNot(Receive(), "renewing in time, it runs on")

	// As a pause leaves it: its last renewal that succeeded started past
	// the deadline ago. A renewal under way when this is written finds it
	// so when it records (errLapsed); the next tick does otherwise.
	m.mu.Lock()
	m.renewed = time.Now().Add(-m.renewDeadline() - time.Second)
	m.mu.Unlock()
	var got error
	g.Eventually(stopped, 10*time.Second).Should(Receive(&got))
	g.Expect(got).To(MatchError(errLapsed))
	g.Expect(lost.Load()).To(BeTrue(), "told to stop reconciling")
}

// TestATakerReadsTheHolderFirst: before taking a bucket from a member it
// counts gone, a member reads that member's Lease from the API server: one
// that changed since it was last seen (the taker's watch fell behind) is a
// live member's, whose buckets are left to it and which counts live again;
// one that did not is taken from.
func TestATakerReadsTheHolderFirst(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.CreateNamespace(t)
	other, err := NewMember(env.Config, nil, nil, Options{Name: "other", Ring: "windlass", Namespace: ns, LeaseDuration: 15 * time.Second})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(other.renew(ctx)).To(Succeed())
	m := testMember(g, ns, "me", "me", "third") // other counted gone
	b := bucketOwnedBy(g, m.assignment, "me")
	bucketLease(g, ns, b, "other")
	readLeases(g, m)
	expired := func() {
		m.mu.Lock()
		defer m.mu.Unlock()
		m.liveMembers(m.leaseStore.List(), time.Now().Add(-time.Hour))
	}
	expired()

	g.Expect(other.renew(ctx)).To(Succeed(), "renewed, and the member's store has not seen it")
	m.balance(ctx)
	g.Expect(holderOf(g, ns, b)).To(Equal("other"), "left to the live member")
	g.Expect(m.buckets.held).NotTo(HaveKey(b))
	g.Expect(m.liveMembers(m.leaseStore.List(), time.Now())).To(ContainElement("other"), "counted live again")

	readLeases(g, m)
	expired()
	m.balance(ctx)
	g.Expect(holderOf(g, ns, b)).To(Equal("me"), "taken from a member whose Lease did not change")
	g.Expect(m.buckets.held).To(HaveKey(b))
}
