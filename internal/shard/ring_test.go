package shard

import (
	"fmt"
	"testing"

	. "github.com/onsi/gomega"
)

// keys returns n keys shaped like the benchmark's: one namespace per
// application, or namespace/name.
func keys(n int, shape string) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf(shape, i)
	}
	return out
}

func members(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("windlass-7d9f8c6b5-%05d", i*7919)
	}
	return out
}

func shares(r Ring, ks []string) map[string]int {
	got := map[string]int{}
	for _, k := range ks {
		got[r.Owner(k)]++
	}
	return got
}

func TestRingBalance(t *testing.T) {
	for _, shape := range []string{"app-%d", "bench-x7k2p/app-%d"} {
		for _, replicas := range []int{3, 5, 10} {
			t.Run(fmt.Sprintf("%s/%d", shape, replicas), func(t *testing.T) {
				g := NewWithT(t)
				ks := keys(10000, shape)
				got := shares(NewRing(members(replicas)...), ks)
				g.Expect(got).To(HaveLen(replicas))
				fair := float64(len(ks)) / float64(replicas)
				for m, n := range got {
					g.Expect(float64(n)).To(BeNumerically("~", fair, fair*0.10), "share of %s", m)
				}
			})
		}
	}
}

func TestRingMovesOnlyWhatItMust(t *testing.T) {
	ks := keys(10000, "app-%d")
	for _, replicas := range []int{3, 5, 10} {
		t.Run(fmt.Sprint(replicas), func(t *testing.T) {
			g := NewWithT(t)
			all := members(replicas + 1)
			before, after := NewRing(all[:replicas]...), NewRing(all...)
			joined := all[replicas]
			moved := 0
			for _, k := range ks {
				was, is := before.Owner(k), after.Owner(k)
				if was != is {
					moved++
					g.Expect(is).To(Equal(joined), "a join moves keys only to the member that joined")
				}
			}
			fair := float64(len(ks)) / float64(replicas+1)
			g.Expect(float64(moved)).To(BeNumerically("~", fair, fair*0.10))

			left := all[0]
			without := NewRing(all[1:]...)
			for _, k := range ks {
				if was := after.Owner(k); was != left {
					g.Expect(without.Owner(k)).To(Equal(was), "a leave moves only the keys of the member that left")
				}
			}
		})
	}
}

func TestRingEdges(t *testing.T) {
	g := NewWithT(t)
	g.Expect(NewRing().Owner("a")).To(BeEmpty())
	g.Expect(NewRing("only").Owner("a")).To(Equal("only"))
	r := NewRing("b", "a", "b")
	g.Expect(r.Members()).To(Equal([]string{"a", "b"}))
	g.Expect(r.Has("a")).To(BeTrue())
	g.Expect(r.Has("c")).To(BeFalse())
	g.Expect(r.Equal(NewRing("a", "b"))).To(BeTrue())
	g.Expect(r.Owner("x")).To(Equal(NewRing("a", "b").Owner("x")), "the owner does not depend on the order of members")
}
