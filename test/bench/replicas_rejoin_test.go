package main

import (
	"testing"

	. "github.com/onsi/gomega"
)

// TestBucketsElsewhere counts the buckets whose holder is not the one of
// before the kill: moved to another member, or held by none.
func TestBucketsElsewhere(t *testing.T) {
	want := map[int]string{0: "r0", 1: "r1", 2: "r2", 3: "r2"}
	for _, tc := range []struct {
		name string
		now  map[int]string
		want int
	}{
		{"handed back", map[int]string{0: "r0", 1: "r1", 2: "r2", 3: "r2"}, 0},
		{"still with the survivors", map[int]string{0: "r0", 1: "r1", 2: "r0", 3: "r1"}, 2},
		{"one held by none", map[int]string{0: "r0", 1: "r1", 2: "r2"}, 1},
		{"a bucket not in the old share is not counted", map[int]string{0: "r0", 1: "r1", 2: "r2", 3: "r2", 4: "r1"}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			NewWithT(t).Expect(bucketsElsewhere(want, tc.now)).To(Equal(tc.want))
		})
	}
}

// TestHeldTwice counts the objects two replicas' metrics have a success
// of, and names the first by key with the replicas, in name order.
func TestHeldTwice(t *testing.T) {
	g := NewWithT(t)
	n, example := heldTwice(map[string]map[string]float64{
		"r0": {"Kustomization/ns/a": 1, "Kustomization/ns/b": 2},
		"r1": {"Kustomization/ns/c": 3},
		"r2": {},
	})
	g.Expect(n).To(BeZero())
	g.Expect(example).To(BeEmpty())

	n, example = heldTwice(map[string]map[string]float64{
		"r2": {"Kustomization/ns/b": 1, "GitRepository/ns/z": 1},
		"r0": {"Kustomization/ns/b": 2, "Kustomization/ns/a": 1},
		"r1": {"GitRepository/ns/z": 3, "Kustomization/ns/b": 4},
	})
	g.Expect(n).To(Equal(2))
	g.Expect(example).To(Equal("GitRepository/ns/z (r1, r2)"))
}
