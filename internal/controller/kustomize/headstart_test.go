package kustomize

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/types"
)

// TestHeadStarts: the other Kustomizations of a source wait for the runs of
// those with a head start, and only they: the changed ones, those of
// another source and those of a source without one go at once; the wait ends
// when the last changed run ends, when the time is up, or with the context.
func TestHeadStarts(t *testing.T) {
	app := func(name string) types.NamespacedName { return types.NamespacedName{Namespace: "default", Name: name} }
	changedA, changedB, other := app("a"), app("b"), app("other")

	tests := []struct {
		name    string
		limit   time.Duration
		waitFor string // the source whose other Kustomization waits
		// end ends the head start of source "mono" (changed a and b) while
		// other waits; nil when other must not be held at all.
		end func(h *headStarts, cancel context.CancelFunc)
	}{
		{name: "the last changed run ends it", limit: time.Hour, waitFor: "mono", end: func(h *headStarts, _ context.CancelFunc) {
			h.ran("mono", changedA)
			h.ran("mono", other) // a run without the head start ends nothing
			h.ran("mono", changedB)
		}},
		{name: "the context ends", limit: time.Hour, waitFor: "mono", end: func(_ *headStarts, cancel context.CancelFunc) { cancel() }},
		{name: "the time is up", limit: 20 * time.Millisecond, waitFor: "mono"},
		{name: "another source has none", limit: time.Hour, waitFor: "elsewhere"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			h := &headStarts{limit: tt.limit}
			h.begin("mono", []types.NamespacedName{changedA, changedB})
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()

			h.wait(ctx, "mono", changedA) // returns at once: a has the head start
			waited := make(chan struct{})
			go func() {
				h.wait(ctx, tt.waitFor, other)
				close(waited)
			}()
			if tt.end != nil {
				g.Consistently(waited, 50*time.Millisecond).ShouldNot(BeClosed(), "the head start holds the others")
				tt.end(h, cancel)
			}
			g.Eventually(waited).Should(BeClosed())
		})
	}
}

// TestHeadStartsRenew: a source's newer artifact replaces its head start;
// once over, nothing waits.
func TestHeadStartsRenew(t *testing.T) {
	g := NewWithT(t)
	h := &headStarts{limit: time.Hour}
	first, second, other := types.NamespacedName{Name: "first"}, types.NamespacedName{Name: "second"}, types.NamespacedName{Name: "other"}
	h.begin("mono", []types.NamespacedName{first})
	h.begin("mono", []types.NamespacedName{second})
	h.ran("mono", first) // of the head start that was replaced: ends nothing
	waited := make(chan struct{})
	go func() {
		h.wait(context.Background(), "mono", other)
		close(waited)
	}()
	g.Consistently(waited, 50*time.Millisecond).ShouldNot(BeClosed())
	h.ran("mono", second)
	g.Eventually(waited).Should(BeClosed())
	g.Expect(h.bySource).To(BeEmpty(), "nothing is kept once the head start is over")
}
