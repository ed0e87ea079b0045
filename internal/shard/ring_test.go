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

func TestRingEdges(t *testing.T) {
	g := NewWithT(t)
	r := NewRing("b", "a", "b")
	g.Expect(r.Members()).To(Equal([]string{"a", "b"}))
	g.Expect(r.Has("a")).To(BeTrue())
	g.Expect(r.Has("c")).To(BeFalse())
	g.Expect(r.Equal(NewRing("a", "b"))).To(BeTrue())
	g.Expect(r.Assign()).To(Equal(NewRing("a", "b").Assign()), "the assignment does not depend on the order of members")
}
