package shard

import (
	"fmt"
	"testing"

	. "github.com/onsi/gomega"
)

// objectShares returns how many of ks each member holds, through their
// buckets.
func objectShares(a Assignment, ks []string) map[string]int {
	got := map[string]int{}
	for _, k := range ks {
		got[a.Owner(BucketOf(k))]++
	}
	return got
}

func TestAssignBalance(t *testing.T) {
	for _, replicas := range []int{1, 2, 3, 5, 10} {
		t.Run(fmt.Sprint(replicas), func(t *testing.T) {
			g := NewWithT(t)
			a := NewRing(members(replicas)...).Assign()
			g.Expect(a).To(HaveLen(Buckets))
			total := 0
			for _, m := range members(replicas) {
				n := len(a.Of(m))
				g.Expect(n).To(BeElementOf(Buckets/replicas, Buckets/replicas+1), "buckets of %s", m)
				total += n
			}
			g.Expect(total).To(Equal(Buckets), "every bucket has a member")
			g.Expect(a).To(Equal(NewRing(members(replicas)...).Assign()), "the same members give the same assignment")
		})
	}
}

func TestAssignObjectBalance(t *testing.T) {
	for _, shape := range []string{"app-%d", "bench-x7k2p/app-%d"} {
		for _, replicas := range []int{3, 5, 10} {
			t.Run(fmt.Sprintf("%s/%d", shape, replicas), func(t *testing.T) {
				g := NewWithT(t)
				ks := keys(10000, shape)
				got := objectShares(NewRing(members(replicas)...).Assign(), ks)
				g.Expect(got).To(HaveLen(replicas))
				fair := float64(len(ks)) / float64(replicas)
				for m, n := range got {
					g.Expect(float64(n)).To(BeNumerically("~", fair, fair*0.10), "share of %s", m)
				}
			})
		}
	}
}

func TestAssignMovesLittle(t *testing.T) {
	for _, replicas := range []int{2, 3, 5, 10} {
		t.Run(fmt.Sprint(replicas), func(t *testing.T) {
			g := NewWithT(t)
			all := members(replicas + 1)
			before, after := NewRing(all[:replicas]...).Assign(), NewRing(all...).Assign()
			joined := all[replicas]
			toJoined, between := 0, 0
			for b := range Buckets {
				switch was, is := before.Owner(b), after.Owner(b); {
				case was == is:
				case is == joined:
					toJoined++
				default:
					between++
				}
			}
			fair := Buckets / (replicas + 1)
			t.Logf("join: %d buckets to the new member, %d between the others (fair share %d)", toJoined, between, fair)
			g.Expect(toJoined).To(BeNumerically(">=", fair), "the member that joined takes its share")
			g.Expect(between).To(BeNumerically("<=", fair/4), "few buckets move between the members that stay")

			left := all[0]
			without := NewRing(all[1:]...).Assign()
			kept := 0
			for b := range Buckets {
				if was := after.Owner(b); was != left && without.Owner(b) == was {
					kept++
				}
			}
			t.Logf("leave: %d of %d buckets of the others kept", kept, Buckets-len(after.Of(left)))
			g.Expect(kept).To(BeNumerically(">=", (Buckets-len(after.Of(left)))*9/10),
				"a leave moves the buckets of the member that left, and few others")
		})
	}
}

func TestBuckets(t *testing.T) {
	g := NewWithT(t)
	g.Expect(NewRing().Assign()).To(BeEmpty())
	g.Expect(NewRing().Assign().Owner(3)).To(BeEmpty())
	g.Expect(NewRing("only").Assign().Of("only")).To(HaveLen(Buckets))
	g.Expect(BucketOf("a/b")).To(Equal(BucketOf("a/b")))
	for _, v := range []string{"0", "17", "255"} {
		b, ok := ParseBucket(v)
		g.Expect(ok).To(BeTrue(), v)
		g.Expect(BucketValue(b)).To(Equal(v))
	}
	for _, v := range []string{"", "-1", "256", "017", "x", " 1"} {
		_, ok := ParseBucket(v)
		g.Expect(ok).To(BeFalse(), v)
	}
}
