package shard

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func lease(name, holder, resourceVersion string) *coordinationv1.Lease {
	return &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: name, ResourceVersion: resourceVersion, Labels: map[string]string{RingLabel: "windlass"}},
		Spec:       coordinationv1.LeaseSpec{HolderIdentity: ptr.To(holder), LeaseDurationSeconds: ptr.To(int32(15))},
	}
}

// TestLiveMembers times the changes of the others' Leases by this member's
// clock: a member whose Lease stopped changing for its duration is not live
// any more, whatever its renew time says.
func TestLiveMembers(t *testing.T) {
	g := NewWithT(t)
	m := &Member{opts: Options{Name: "me", LeaseDuration: 15 * time.Second}, seen: map[string]observation{}}
	start := time.Unix(1700000000, 0)
	leases := []any{
		lease("windlass-shard-me", "me", "1"),
		lease("windlass-shard-a", "a", "1"),
		lease("windlass-shard-b", "b", "1"),
		lease("windlass-leader-election", "c", "1"), // not a member's Lease
		lease("windlass-shard-d", "", "1"),          // nobody holds it
	}
	g.Expect(NewRing(m.liveMembers(leases, start)...).Members()).To(Equal([]string{"a", "b", "me"}),
		"a Lease seen for the first time counts as live for its duration")

	leases[1] = lease("windlass-shard-a", "a", "2") // a renews, b does not
	g.Expect(NewRing(m.liveMembers(leases, start.Add(10*time.Second))...).Members()).To(Equal([]string{"a", "b", "me"}))
	g.Expect(NewRing(m.liveMembers(leases, start.Add(16*time.Second))...).Members()).To(Equal([]string{"a", "me"}),
		"b stopped renewing 16s ago by this member's clock")

	g.Expect(m.liveMembers(leases[:1], start.Add(17*time.Second))).To(Equal([]string{"me"}), "deleted Leases leave")
	g.Expect(m.seen).To(HaveLen(1), "and are forgotten")
	g.Expect(m.liveMembers(nil, start)).To(Equal([]string{"me"}), "this member is live while it runs")
}

// TestUntilNextLook: a member looks at the Leases again just after the
// first of the others' expires by its clock, and at least every second.
func TestUntilNextLook(t *testing.T) {
	start := time.Unix(1700000000, 0)
	for _, tt := range []struct {
		name string
		seen map[string]observation
		now  time.Time
		want time.Duration
	}{
		{"alone", map[string]observation{"me": {at: start}}, start, maxLookInterval},
		{"the others far from expiry", map[string]observation{"a": {at: start}}, start.Add(5 * time.Second), maxLookInterval},
		{"one expires in 300ms", map[string]observation{"a": {at: start}, "b": {at: start.Add(time.Second)}}, start.Add(14700 * time.Millisecond),
			300*time.Millisecond + time.Millisecond},
		{"its own duration when longer", map[string]observation{"a": {at: start, duration: 20 * time.Second}}, start.Add(19800 * time.Millisecond),
			200*time.Millisecond + time.Millisecond},
		{"this member's Lease does not count", map[string]observation{"me": {at: start}}, start.Add(14900 * time.Millisecond), maxLookInterval},
		{"expired already: the usual interval", map[string]observation{"a": {at: start}}, start.Add(20 * time.Second), maxLookInterval},
	} {
		t.Run(tt.name, func(t *testing.T) {
			m := &Member{opts: Options{Name: "me", LeaseDuration: 15 * time.Second}, seen: tt.seen}
			NewWithT(t).Expect(m.untilNextLook(tt.now)).To(Equal(tt.want))
		})
	}
}

// TestMembersOfOneNameAreRefused: a second process started with a member's
// name takes the Lease over, and the first, at its next renewal, finds
// another process's write and stops (errSameName); a process that restarts
// (the first renewal of its life) renews the Lease its earlier process left.
func TestMembersOfOneNameAreRefused(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	opts := Options{Name: "twin", Ring: "windlass", Namespace: env.CreateNamespace(t), LeaseDuration: 15 * time.Second}
	member := func() *Member {
		m, err := NewMember(env.Config, env.Client, env.Client.RESTMapper(), opts)
		g.Expect(err).NotTo(HaveOccurred())
		return m
	}
	first, second := member(), member()
	g.Expect(first.renew(ctx)).To(Succeed())
	g.Expect(first.renew(ctx)).To(Succeed(), "its own Lease")
	g.Expect(second.renew(ctx)).To(Succeed(), "a process's first renewal takes the Lease over, as after a restart")
	g.Expect(first.renew(ctx)).To(MatchError(errSameName), "another process wrote its Lease")
	g.Expect(second.renew(ctx)).To(Succeed())

	restarted := member()
	g.Expect(restarted.renew(ctx)).To(Succeed())
	g.Expect(restarted.renew(ctx)).To(Succeed())
}
