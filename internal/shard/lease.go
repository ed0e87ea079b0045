package shard

import (
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/utils/ptr"
)

// MemberLease is a member of a ring as its Lease records it, for those
// that look at the ring from outside (`windlass get shards`).
type MemberLease struct {
	// Member is the member's name, the Lease's holder.
	Member string
	// Ring names the ring the member belongs to (RingLabel).
	Ring string
	// Renewed is when the member last renewed its Lease, by its own clock;
	// zero when the Lease has no renew time.
	Renewed time.Time
	// Duration is how long after Renewed the member counts as live.
	Duration time.Duration
}

// ReadLease returns the member that lease records, and false when it is
// not a member's Lease: it has no RingLabel or no holder, or it is not
// named after its holder (the members ignore such Leases too).
func ReadLease(lease *coordinationv1.Lease) (MemberLease, bool) {
	member := ptr.Deref(lease.Spec.HolderIdentity, "")
	ring := lease.Labels[RingLabel]
	if member == "" || ring == "" || lease.Name != leaseName(member) {
		return MemberLease{}, false
	}
	m := MemberLease{Member: member, Ring: ring,
		Duration: time.Duration(ptr.Deref(lease.Spec.LeaseDurationSeconds, 0)) * time.Second}
	if lease.Spec.RenewTime != nil {
		m.Renewed = lease.Spec.RenewTime.Time
	}
	return m, true
}

// Expires returns when the member stops counting as live unless it renews
// its Lease; zero when it never renewed it.
func (m MemberLease) Expires() time.Time {
	if m.Renewed.IsZero() {
		return time.Time{}
	}
	return m.Renewed.Add(m.Duration)
}

// LiveAt reports whether the member is live at t: it renewed its Lease
// less than its duration before t. This compares t with a time written by
// the member's clock, which the members themselves never do (they time
// the changes of each other's Leases by their own clocks): a reader whose
// clock is off by a few seconds sees a member live or expired that much
// too long.
func (m MemberLease) LiveAt(t time.Time) bool {
	return !m.Renewed.IsZero() && t.Before(m.Expires())
}
