package dispatch

import (
	"context"
	"fmt"
	"regexp"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	eventv1 "github.com/windlass-dev/windlass/api/event/v1beta1"
)

func TestMatch(t *testing.T) {
	web := Source{Kind: "Kustomization", Name: "web"}
	anyName := Source{Kind: "Kustomization", Name: "*"}
	labelled := Source{Kind: "Kustomization", Name: "*", MatchLabels: map[string]string{"team": "web"}}
	fail := regexp.MustCompile("fail")
	tests := []struct {
		name      string
		sources   []Source
		severity  string
		include   []*regexp.Regexp
		exclude   []*regexp.Regexp
		event     eventv1.Event
		labels    map[string]string
		forwarded bool
	}{
		{name: "kind and name", sources: []Source{web}, event: ksError("web", "x"), forwarded: true},
		{name: "other name", sources: []Source{web}, event: ksError("api", "x")},
		{name: "other kind", sources: []Source{web}, event: event("HelmRelease", "apps", "web", "info", "R", "x")},
		{name: "name *", sources: []Source{anyName}, event: ksError("api", "x"), forwarded: true},
		{name: "one of the sources", sources: []Source{web, {Kind: "GitRepository", Name: "*"}},
			event: event("GitRepository", "apps", "src", "info", "R", "x"), forwarded: true},
		{name: "the rule's namespace by default", sources: []Source{anyName},
			event: event("Kustomization", "other", "web", "info", "R", "x")},
		{name: "another namespace when named", sources: []Source{{Kind: "Kustomization", Name: "*", Namespace: "other"}},
			event: event("Kustomization", "other", "web", "info", "R", "x"), forwarded: true},
		{name: "matchLabels match", sources: []Source{labelled}, event: ksError("web", "x"),
			labels: map[string]string{"team": "web", "tier": "front"}, forwarded: true},
		{name: "matchLabels differ", sources: []Source{labelled}, event: ksError("web", "x"), labels: map[string]string{"team": "api"}},
		{name: "matchLabels without labels", sources: []Source{labelled}, event: ksError("web", "x")},
		{name: "error rule, info event", sources: []Source{anyName}, severity: SeverityError, event: ksReady("web")},
		{name: "error rule, error event", sources: []Source{anyName}, severity: SeverityError, event: ksError("web", "x"), forwarded: true},
		{name: "info rule, info event", sources: []Source{anyName}, severity: SeverityInfo, event: ksReady("web"), forwarded: true},
		{name: "trace event", sources: []Source{anyName}, event: event("Kustomization", "apps", "web", eventv1.SeverityTrace, "R", "x")},
		{name: "inclusion matches", sources: []Source{anyName}, include: []*regexp.Regexp{regexp.MustCompile("nope"), fail},
			event: ksError("web", "build failed"), forwarded: true},
		{name: "inclusion does not match", sources: []Source{anyName}, include: []*regexp.Regexp{fail}, event: ksReady("web")},
		{name: "exclusion matches", sources: []Source{anyName}, exclude: []*regexp.Regexp{fail}, event: ksError("web", "build failed")},
		{name: "exclusion wins over inclusion", sources: []Source{anyName}, include: []*regexp.Regexp{fail},
			exclude: []*regexp.Regexp{regexp.MustCompile("^build")}, event: ksError("web", "build failed")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			d := New(Options{})
			g.Expect(d.SetRule(Rule{Key: "apps/a", Namespace: "apps", Sources: tt.sources, Severity: tt.severity,
				Inclusion: tt.include, Exclusion: tt.exclude, Notifier: &recorder{}, ProviderKey: "apps/p"})).To(Succeed())
			d.Dispatch(context.Background(), tt.event, Object{Labels: tt.labels})
			want := 0
			if tt.forwarded {
				want = 1
			}
			g.Expect(queued(d, "apps/p")).To(HaveLen(want))
		})
	}
}

func TestSetRuleRefusesInvalidRules(t *testing.T) {
	g := NewWithT(t)
	d := New(Options{})
	g.Expect(d.SetRule(Rule{Notifier: &recorder{}})).To(MatchError(ContainSubstring("needs a key")))
	g.Expect(d.SetRule(Rule{Key: "a/b"})).To(MatchError(ContainSubstring("no notifier")))
	g.Expect(d.SetRule(Rule{Key: "a/b", Notifier: &recorder{}, Severity: "warning"})).To(MatchError(ContainSubstring(`invalid severity "warning"`)))
}

// TestMetadata: the rule's metadata is added to a copy of the event's;
// the event's own keys win.
func TestMetadata(t *testing.T) {
	g := NewWithT(t)
	d := New(Options{})
	r := allKustomizations("apps/a", SeverityInfo, "apps/p", &recorder{})
	r.Metadata = map[string]string{"env": "alert", eventv1.MetaSummary: "prod is down"}
	g.Expect(d.SetRule(r)).To(Succeed())
	e := ksReady("web")
	e.Metadata = map[string]string{"env": "object", "kustomize.toolkit.fluxcd.io/revision": "main@sha1:1"}
	d.Dispatch(context.Background(), e, Object{})
	got := queued(d, "apps/p")
	g.Expect(got).To(HaveLen(1))
	g.Expect(got[0].Metadata).To(Equal(map[string]string{"env": "object", "summary": "prod is down",
		"kustomize.toolkit.fluxcd.io/revision": "main@sha1:1"}))
	g.Expect(e.Metadata).To(HaveLen(2), "the caller's map is not changed")
}

// TestDeduplication: the same event is sent once per window, then again;
// another revision or object is another event.
func TestDeduplication(t *testing.T) {
	g := NewWithT(t)
	clk := newClock()
	d := New(Options{Now: clk.Now})
	g.Expect(d.SetRule(allKustomizations("apps/a", SeverityInfo, "apps/p", &recorder{}))).To(Succeed())
	withRevision := func(e eventv1.Event, rev string) eventv1.Event {
		e.Metadata = map[string]string{"kustomize.toolkit.fluxcd.io/revision": rev}
		return e
	}
	ctx := context.Background()
	e := withRevision(ksReady("web"), "main@sha1:1")

	d.Dispatch(ctx, e, Object{})
	d.Dispatch(ctx, withRevision(ksReady("web"), "main@sha1:1"), Object{})
	g.Expect(queued(d, "apps/p")).To(HaveLen(1))
	g.Expect(d.Stats().Deduplicated).To(Equal(int64(1)))

	clk.Advance(4 * time.Minute)
	d.Dispatch(ctx, e, Object{})
	g.Expect(queued(d, "apps/p")).To(HaveLen(1), "still within the window")

	clk.Advance(time.Minute)
	d.Dispatch(ctx, e, Object{})
	g.Expect(queued(d, "apps/p")).To(HaveLen(2), "the window has passed")

	d.Dispatch(ctx, withRevision(ksReady("web"), "main@sha1:2"), Object{})
	d.Dispatch(ctx, withRevision(ksReady("api"), "main@sha1:2"), Object{})
	g.Expect(queued(d, "apps/p")).To(HaveLen(4))
	g.Expect(d.Stats().Deduplicated).To(Equal(int64(2)))
}

// TestResolved: a failure then a recovery send one failure and one
// resolved message, to the error rule as well, once.
func TestResolved(t *testing.T) {
	g := NewWithT(t)
	d := New(Options{})
	ctx := context.Background()
	oncall := allKustomizations("apps/oncall", SeverityError, "apps/pagerduty", &recorder{})
	oncall.Inclusion = []*regexp.Regexp{regexp.MustCompile("fail")}
	g.Expect(d.SetRule(oncall)).To(Succeed())
	g.Expect(d.SetRule(allKustomizations("apps/team", SeverityInfo, "apps/slack", &recorder{}))).To(Succeed())

	d.Dispatch(ctx, ksError("web", "health check failed"), Object{})
	d.Dispatch(ctx, ksReady("web"), Object{Ready: true})
	for _, p := range []string{"apps/pagerduty", "apps/slack"} {
		got := queued(d, p)
		g.Expect(got).To(HaveLen(2), p)
		g.Expect(got[0].Resolves).To(BeFalse())
		g.Expect(got[1].Resolves).To(BeTrue())
		g.Expect(got[1].Reason).To(Equal("ReconciliationSucceeded"))
	}
	g.Expect(d.Stats().Resolved).To(Equal(int64(2)))

	d.Dispatch(ctx, ksReady("web"), Object{Ready: true})
	g.Expect(queued(d, "apps/pagerduty")).To(HaveLen(2), "resolved once")
	g.Expect(queued(d, "apps/slack")).To(HaveLen(2), "the same event, deduplicated")

	d.Dispatch(ctx, ksReady("api"), Object{Ready: true})
	g.Expect(queued(d, "apps/pagerduty")).To(HaveLen(2), "api never failed")
	slack := queued(d, "apps/slack")
	g.Expect(slack).To(HaveLen(3))
	g.Expect(slack[2].Resolves).To(BeFalse())

	d.Dispatch(ctx, ksError("web", "build failed"), Object{})
	d.Dispatch(ctx, event("Kustomization", "apps", "web", "info", "Progressing", "applying"), Object{})
	g.Expect(queued(d, "apps/pagerduty")).To(HaveLen(3), "not ready: nothing is resolved")
	d.Dispatch(ctx, event("Kustomization", "apps", "web", "trace", "Ready", "ok"), Object{Ready: true})
	g.Expect(queued(d, "apps/pagerduty")).To(HaveLen(3), "a trace event resolves nothing")
}

// TestResolvedOnlyForSentFailures: an object whose failure was folded into
// another's message gets no resolved message; one that was the flood's
// summary does.
func TestResolvedOnlyForSentFailures(t *testing.T) {
	g := NewWithT(t)
	clk := newClock()
	d := New(Options{Now: clk.Now, FoldAfter: 1})
	ctx := context.Background()
	g.Expect(d.SetRule(allKustomizations("apps/oncall", SeverityError, "apps/p", &recorder{}))).To(Succeed())
	for _, name := range []string{"a", "b", "c"} {
		d.Dispatch(ctx, ksError(name, "source not ready"), Object{})
	}
	clk.Advance(DefaultWindow)
	d.Flush()
	g.Expect(queued(d, "apps/p")).To(HaveLen(2))
	for _, name := range []string{"a", "b", "c"} {
		d.Dispatch(ctx, ksReady(name), Object{Ready: true})
	}
	got := queued(d, "apps/p")
	g.Expect(got).To(HaveLen(4))
	g.Expect([]string{got[2].InvolvedObject.Name, got[3].InvolvedObject.Name}).To(Equal([]string{"a", "c"}))
	g.Expect(got[3].Resolves).To(BeTrue())
}

// TestDeleteRule: a deleted rule forwards nothing, is gone from
// ProviderOf, and forgets its failures.
func TestDeleteRule(t *testing.T) {
	g := NewWithT(t)
	d := New(Options{})
	ctx := context.Background()
	r := allKustomizations("apps/oncall", SeverityError, "apps/p", &recorder{})
	g.Expect(d.SetRule(r)).To(Succeed())
	provider, ok := d.ProviderOf(r.Key)
	g.Expect(ok).To(BeTrue())
	g.Expect(provider).To(Equal("apps/p"))
	d.Dispatch(ctx, ksError("web", "failed"), Object{})
	d.DeleteRule(r.Key)
	_, ok = d.ProviderOf(r.Key)
	g.Expect(ok).To(BeFalse())
	d.Dispatch(ctx, ksError("api", "failed"), Object{})
	g.Expect(queued(d, "apps/p")).To(HaveLen(1))
	g.Expect(d.SetRule(r)).To(Succeed())
	d.Dispatch(ctx, ksReady("web"), Object{Ready: true})
	g.Expect(queued(d, "apps/p")).To(HaveLen(1), "the failure was forgotten with the rule")
}

// TestNoFold: a rule that does not fold sends every error event.
func TestNoFold(t *testing.T) {
	g := NewWithT(t)
	d := New(Options{})
	r := allKustomizations("apps/status", SeverityError, "apps/github", &recorder{})
	r.NoFold = true
	g.Expect(d.SetRule(r)).To(Succeed())
	for i := range 10 {
		d.Dispatch(context.Background(), ksError(fmt.Sprintf("ks-%d", i), "failed"), Object{})
	}
	g.Expect(queued(d, "apps/github")).To(HaveLen(10))
	g.Expect(d.Stats().Folded).To(BeZero())
}

func TestBoundedSet(t *testing.T) {
	g := NewWithT(t)
	t0 := time.Unix(0, 0)
	s := newBoundedSet[string](3)
	s.add("a", t0)
	s.add("b", t0.Add(time.Second))
	s.add("c", t0.Add(2*time.Second))
	s.add("a", t0.Add(3*time.Second))
	s.add("d", t0.Add(4*time.Second))
	g.Expect(s.len()).To(Equal(3))
	g.Expect(s.has("b")).To(BeFalse(), "the oldest is forgotten past the bound")
	g.Expect(s.has("a")).To(BeTrue(), "adding again makes a key the newest")
	s.forgetUpTo(t0.Add(2 * time.Second))
	g.Expect(s.has("c")).To(BeFalse())
	g.Expect(s.has("a") && s.has("d")).To(BeTrue())
	s.removeIf(func(k string) bool { return k == "a" })
	g.Expect(s.len()).To(Equal(1))
}
