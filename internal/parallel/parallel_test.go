package parallel

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

func TestDoRunsEveryIndexWithinTheLimit(t *testing.T) {
	for _, tt := range []struct{ n, limit int }{{0, 4}, {1, 4}, {10, 3}, {5, 0}} {
		g := NewWithT(t)
		var running, peak atomic.Int32
		seen := make([]atomic.Bool, tt.n)
		panics := Do(context.Background(), tt.n, tt.limit, func(i int) {
			now := running.Add(1)
			for {
				p := peak.Load()
				if now <= p || peak.CompareAndSwap(p, now) {
					break
				}
			}
			time.Sleep(time.Millisecond)
			seen[i].Store(true)
			running.Add(-1)
		})
		g.Expect(panics).To(BeEmpty(), "n=%d limit=%d", tt.n, tt.limit)
		for i := range seen {
			g.Expect(seen[i].Load()).To(BeTrue(), "n=%d limit=%d: index %d was not run", tt.n, tt.limit, i)
		}
		g.Expect(peak.Load()).To(BeNumerically("<=", max(tt.limit, 1)), "n=%d limit=%d", tt.n, tt.limit)
	}
}

func TestDoTurnsPanicsIntoErrorsOfTheirIndex(t *testing.T) {
	for _, tt := range []struct {
		name       string
		n, limit   int
		panicking  []int
		wantValues []any
	}{
		{name: "one piece, on the calling goroutine", n: 1, limit: 4, panicking: []int{0}, wantValues: []any{"boom 0"}},
		{name: "some of many", n: 10, limit: 3, panicking: []int{2, 7}, wantValues: []any{"boom 2", "boom 7"}},
		{name: "all, one at a time", n: 3, limit: 1, panicking: []int{0, 1, 2}, wantValues: []any{"boom 0", "boom 1", "boom 2"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			finished := make([]atomic.Bool, tt.n)
			panics := Do(context.Background(), tt.n, tt.limit, func(i int) {
				if slices.Contains(tt.panicking, i) {
					panic(fmt.Sprintf("boom %d", i))
				}
				finished[i].Store(true)
			})
			g.Expect(panics).To(HaveLen(len(tt.panicking)))
			for k, p := range panics {
				g.Expect(p.Index).To(Equal(tt.panicking[k]))
				g.Expect(p.Value).To(Equal(tt.wantValues[k]))
				g.Expect(p).To(MatchError("panicked: " + tt.wantValues[k].(string)))
				g.Expect(string(p.Stack)).To(ContainSubstring("parallel_test.go"))
			}
			for i := range finished {
				g.Expect(finished[i].Load()).To(Equal(!slices.Contains(tt.panicking, i)), "index %d", i)
			}
		})
	}
}

func TestDoRecoversARuntimeError(t *testing.T) {
	g := NewWithT(t)
	panics := Do(context.Background(), 2, 2, func(i int) {
		var m map[string]int
		if i == 1 {
			m["x"] = 1
		}
	})
	g.Expect(panics).To(HaveLen(1))
	g.Expect(panics[0].Index).To(Equal(1))
	g.Expect(panics[0].Error()).To(ContainSubstring("panicked: assignment to entry in nil map"))
}

func TestCall(t *testing.T) {
	g := NewWithT(t)
	ran := false
	g.Expect(Call(context.Background(), func() { ran = true })).To(Succeed())
	g.Expect(ran).To(BeTrue())

	err := Call(context.Background(), func() { panic(errors.New("bad pack")) })
	var p *PanicError
	g.Expect(errors.As(err, &p)).To(BeTrue())
	g.Expect(err).To(MatchError("panicked: bad pack"))
	g.Expect(p.Stack).NotTo(BeEmpty())
}
