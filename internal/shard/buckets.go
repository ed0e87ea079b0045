package shard

import (
	"cmp"
	"encoding/binary"
	"hash/fnv"
	"slices"
	"strconv"
)

// Buckets is how many buckets the objects are hashed into. Each object's
// bucket is fixed by its key; the members share the buckets, not the
// objects, so that a member that leaves or joins moves buckets (one Lease
// write each), never objects one by one. It is many times the members a
// ring has, so that each holds near an equal share.
const Buckets = 256

// BucketOf returns the bucket of key.
func BucketOf(key string) int {
	h := fnv.New64a()
	_, _ = h.Write([]byte(key))
	return int(mix(binary.BigEndian.Uint64(h.Sum(nil))) % Buckets)
}

// BucketValue is the value of BucketLabel for bucket b.
func BucketValue(b int) string { return strconv.Itoa(b) }

// ParseBucket returns the bucket that a value of BucketLabel names, and
// false when it names none.
func ParseBucket(value string) (int, bool) {
	b, err := strconv.Atoi(value)
	if err != nil || b < 0 || b >= Buckets || BucketValue(b) != value {
		return 0, false
	}
	return b, true
}

// Assignment gives each bucket to a member of a ring: index b names the
// member that bucket b belongs to.
type Assignment []string

// Assign gives the buckets to the ring's members, floor(Buckets/members)
// or one more each, by rendezvous hashing bounded by that load: every
// (member, bucket) pair is scored, and from the highest score down each
// bucket goes to the first member that scores it and has room (the first
// Buckets%members members to fill their floor get room for one more).
// Every member computes the same Assignment from the same members. A
// member that joins takes about 1/N of the buckets, most of them from the
// others' shares; one that leaves gives its own. It is empty for an empty
// ring.
func (r Ring) Assign() Assignment {
	if len(r.members) == 0 {
		return nil
	}
	type pair struct {
		score  uint64
		member int
		bucket int
	}
	pairs := make([]pair, 0, Buckets*len(r.members))
	for i, m := range r.members {
		for b := range Buckets {
			pairs = append(pairs, pair{score: score(m, "bucket:"+BucketValue(b)), member: i, bucket: b})
		}
	}
	slices.SortFunc(pairs, func(x, y pair) int {
		return cmp.Or(cmp.Compare(y.score, x.score), cmp.Compare(x.member, y.member), cmp.Compare(x.bucket, y.bucket))
	})
	floor, extra := Buckets/len(r.members), Buckets%len(r.members)
	load := make([]int, len(r.members))
	out := make(Assignment, Buckets)
	for _, p := range pairs {
		if out[p.bucket] != "" || load[p.member] > floor {
			continue
		}
		if load[p.member] == floor {
			if extra == 0 {
				continue
			}
			extra--
		}
		out[p.bucket] = r.members[p.member]
		load[p.member]++
	}
	return out
}

// Owner returns the member that bucket b belongs to, "" when none.
func (a Assignment) Owner(b int) string {
	if b < 0 || b >= len(a) {
		return ""
	}
	return a[b]
}

// Of returns the buckets that belong to member, in order.
func (a Assignment) Of(member string) []int {
	var out []int
	for b, m := range a {
		if m == member {
			out = append(out, b)
		}
	}
	return out
}
