package dispatch

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	eventv1 "github.com/windlass-dev/windlass/api/event/v1beta1"
	"github.com/windlass-dev/windlass/internal/notify"
)

// sourceFailure is the failure of a Kustomization whose source fails: the
// same for every Kustomization but for its own path.
func sourceFailure(name string) eventv1.Event {
	return ksError(name, fmt.Sprintf("building './apps/%s': source 'GitRepository/apps/source' not found", name))
}

// TestFloodOfOneSource: the 1000 Kustomizations behind a failing source
// fail, and fail again in each window while it stays broken. Each provider
// gets one failure message per window, not 1000: the first failure at once,
// then in each window the folded message of the one before, and these
// messages account for every failure reported. When the Kustomizations
// recover, the failures sent are resolved, once each, and those still held
// back are dropped: no failure message comes after the recovery.
func TestFloodOfOneSource(t *testing.T) {
	g := NewWithT(t)
	clk := newClock()
	d := New(Options{Now: clk.Now, QueueSize: 100000})
	providers := []string{"apps/pagerduty", "apps/slack"}
	g.Expect(d.SetRule(allKustomizations("apps/oncall", SeverityError, providers[0], &recorder{}))).To(Succeed())
	g.Expect(d.SetRule(allKustomizations("apps/team", SeverityInfo, providers[1], &recorder{}))).To(Succeed())
	ctx := context.Background()

	const objects = 1000
	start := clk.Now()
	// each calls f for every object, spread over one half of window w,
	// and closes the windows that ended after each call, as Run does.
	each := func(w, half int, f func(name string)) {
		for i := range objects {
			clk.Set(start.Add(time.Duration(w)*DefaultWindow + time.Duration(half)*DefaultWindow/2 + time.Duration(i)*DefaultWindow/(2*objects)))
			f(fmt.Sprintf("ks-%04d", i))
			d.Flush()
		}
	}
	fail := func(name string) { d.Dispatch(ctx, sourceFailure(name), Object{}) }
	recover := func(name string) { d.Dispatch(ctx, ksReady(name), Object{Ready: true}) }
	taken := map[string]int{}
	// since returns the messages queued for p since the last call.
	since := func(p string) []notify.Message {
		all := queued(d, p)
		out := all[taken[p]:]
		taken[p] = len(all)
		return out
	}
	failures := map[string][]notify.Message{}
	resolved := map[string][]string{}
	for w := range 3 {
		each(w, 0, fail)
		if w == 2 {
			each(w, 1, recover)
		}
		for _, p := range providers {
			var inWindow []notify.Message
			for _, m := range since(p) {
				switch {
				case m.Resolves:
					resolved[p] = append(resolved[p], m.InvolvedObject.Name)
				case m.Severity == eventv1.SeverityError:
					inWindow = append(inWindow, m)
				}
			}
			g.Expect(inWindow).To(HaveLen(1), "window %d, provider %s: one failure message", w, p)
			failures[p] = append(failures[p], inWindow...)
		}
	}
	for _, p := range providers {
		got := failures[p]
		g.Expect(got[0].InvolvedObject.Name).To(Equal("ks-0000"))
		g.Expect(got[0].Folded).To(BeZero())
		g.Expect(got[1].Folded).To(Equal(objects-2), "the first window's other failures, folded into the latest")
		g.Expect(got[1].InvolvedObject.Name).To(Equal("ks-0999"))
		g.Expect(got[2].Folded).To(Equal(objects - 1))
		g.Expect(notify.Text(got[2])).To(HaveSuffix(fmt.Sprintf("(and %d more like it)", objects-1)))
		represented := 0
		for _, m := range got {
			represented += 1 + m.Folded
		}
		g.Expect(represented).To(Equal(2*objects), "the failures of the first two windows; those of the third recovered in it")
		g.Expect(resolved[p]).To(ConsistOf("ks-0000", "ks-0999"), "one resolved message for each object whose failure was sent")
	}

	// The source works again: the windows close with nothing to say.
	for w := 3; w < 5; w++ {
		clk.Set(start.Add(time.Duration(w) * DefaultWindow))
		d.Flush()
		for _, p := range providers {
			g.Expect(slices.ContainsFunc(since(p), func(m notify.Message) bool { return m.Severity == eventv1.SeverityError })).
				To(BeFalse(), "window %d: no failure after the recovery", w)
		}
	}
	g.Expect(d.Stats().Folded).To(Equal(int64(2 * (3*objects - 1))))
	g.Expect(d.Stats().Dropped).To(BeZero())
}

// TestUnrelatedFailuresAreNotFolded: failures of one reason but different
// causes (their messages differ by more than their object's name) are each
// sent at once; failures alike are folded.
func TestUnrelatedFailuresAreNotFolded(t *testing.T) {
	g := NewWithT(t)
	d := New(Options{})
	g.Expect(d.SetRule(allKustomizations("apps/oncall", SeverityError, "apps/p", &recorder{}))).To(Succeed())
	ctx := context.Background()
	d.Dispatch(ctx, ksError("backend", "Deployment/apps/backend: ImagePullBackOff"), Object{})
	d.Dispatch(ctx, ksError("frontend", "Deployment/apps/frontend: readiness probe failed"), Object{})
	d.Dispatch(ctx, ksError("worker", "Deployment/apps/worker: ImagePullBackOff"), Object{})
	got := queued(d, "apps/p")
	g.Expect(got).To(HaveLen(2))
	g.Expect([]string{got[0].InvolvedObject.Name, got[1].InvolvedObject.Name}).To(Equal([]string{"backend", "frontend"}))
	g.Expect(d.Stats().Folded).To(Equal(int64(1)), "worker's failure is like backend's")
}

// TestRecoveredWhileHeld: a failure held back by folding whose object
// recovers before the window closes is dropped from the folded message;
// when all have recovered, the window closes with no message.
func TestRecoveredWhileHeld(t *testing.T) {
	for _, recovered := range [][]string{{"b"}, {"b", "c"}} {
		t.Run(fmt.Sprint(recovered), func(t *testing.T) {
			g := NewWithT(t)
			clk := newClock()
			d := New(Options{Now: clk.Now})
			g.Expect(d.SetRule(allKustomizations("apps/oncall", SeverityError, "apps/p", &recorder{}))).To(Succeed())
			ctx := context.Background()
			for _, name := range []string{"a", "b", "c"} {
				d.Dispatch(ctx, sourceFailure(name), Object{})
			}
			for _, name := range recovered {
				d.Dispatch(ctx, ksReady(name), Object{Ready: true})
			}
			g.Expect(queued(d, "apps/p")).To(HaveLen(1), "b and c were held back, and have nothing to resolve")
			clk.Advance(DefaultWindow)
			d.Flush()
			got := queued(d, "apps/p")
			if len(recovered) == 2 {
				g.Expect(got).To(HaveLen(1), "nothing is still failing")
				return
			}
			g.Expect(got).To(HaveLen(2))
			g.Expect(got[1].InvolvedObject.Name).To(Equal("c"))
			g.Expect(got[1].Folded).To(BeZero(), "b recovered: c's message stands for c alone")
		})
	}
}

// TestCauseOf: the cause of an event is its reason and its message, with
// its own name, where it stands on its own, left out.
func TestCauseOf(t *testing.T) {
	tests := []struct {
		name, message, want string
	}{
		{"app-1", "building './apps/app-1': not found", "building './apps/\x00': not found"},
		{"app-1", "app-1: app-1.yaml is invalid", "\x00: \x00.yaml is invalid"},
		{"app-1", "app-10 and app-1b and xapp-1 are other names", "app-10 and app-1b and xapp-1 are other names"},
		{"a", "a: Deployment not ready", "\x00: Deployment not ready"},
		{"", "no name", "no name"},
	}
	for _, tt := range tests {
		t.Run(tt.message, func(t *testing.T) {
			e := ksError(tt.name, tt.message)
			NewWithT(t).Expect(causeOf(e)).To(Equal(e.Reason + "\x00" + tt.want))
		})
	}
}

// TestHeldBound: past MaxRemembered objects, held failures are counted
// without being kept, and the folded message still counts them all.
func TestHeldBound(t *testing.T) {
	g := NewWithT(t)
	clk := newClock()
	d := New(Options{Now: clk.Now, MaxRemembered: 2})
	g.Expect(d.SetRule(allKustomizations("apps/oncall", SeverityError, "apps/p", &recorder{}))).To(Succeed())
	ctx := context.Background()
	for _, name := range []string{"a", "b", "c", "d", "e"} {
		d.Dispatch(ctx, sourceFailure(name), Object{})
	}
	d.Dispatch(ctx, ksReady("b"), Object{Ready: true}) // kept: taken out
	d.Dispatch(ctx, ksReady("e"), Object{Ready: true}) // past the bound: still counted
	clk.Advance(DefaultWindow)
	d.Flush()
	got := queued(d, "apps/p")
	g.Expect(got).To(HaveLen(2))
	g.Expect(got[1].InvolvedObject.Name).To(Equal("e"), "the latest held")
	g.Expect(got[1].Folded).To(Equal(2), "c, d and e are left")
}
