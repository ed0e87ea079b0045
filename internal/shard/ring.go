// Package shard shares the objects of the Windlass kinds among the replicas
// of `windlass controller --shards=auto`. Each replica keeps a Lease in the
// controller's namespace (its membership); the live members form a Ring.
// Each object falls in one of Buckets buckets by a hash of its key (its
// namespace by default, so that a tenant's objects and their dependsOn stay
// together), recorded on it in BucketLabel; the ring assigns each member an
// equal share of the buckets. Who reconciles a bucket's objects is written
// in the bucket's Lease: a replica reconciles only the objects of the
// buckets it holds, takes the buckets assigned to it that nobody live
// holds, and hands over the others once no run of their objects is under
// way, so that an object is never reconciled by two replicas at once.
package shard

import (
	"encoding/binary"
	"hash/fnv"
	"slices"
)

// Ring is the set of live members, which share the buckets (Assign).
type Ring struct {
	members []string
}

// NewRing returns the ring of members (duplicates count once).
func NewRing(members ...string) Ring {
	m := slices.Clone(members)
	slices.Sort(m)
	return Ring{members: slices.Compact(m)}
}

// Members returns the ring's members, sorted.
func (r Ring) Members() []string { return slices.Clone(r.members) }

// Has reports whether member is in the ring.
func (r Ring) Has(member string) bool {
	_, found := slices.BinarySearch(r.members, member)
	return found
}

// Equal reports whether both rings have the same members.
func (r Ring) Equal(o Ring) bool { return slices.Equal(r.members, o.members) }

// score is the weight of member for key: a 64-bit FNV-1a hash of both,
// mixed so that every bit depends on every input bit.
func score(member, key string) uint64 {
	h := fnv.New64a()
	_, _ = h.Write([]byte(member))
	_, _ = h.Write([]byte{0})
	_, _ = h.Write([]byte(key))
	return mix(binary.BigEndian.Uint64(h.Sum(nil)))
}

// mix is a 64-bit finalizer (xor-shifts and odd multipliers): FNV-1a alone
// leaves its high bits weakly mixed for inputs that differ at the end.
func mix(x uint64) uint64 {
	x ^= x >> 33
	x *= 0xff51afd7ed558ccd
	x ^= x >> 33
	x *= 0xc4ceb9fe1a85ec53
	x ^= x >> 33
	return x
}
