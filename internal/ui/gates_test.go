package ui

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	gatingv1alpha1 "github.com/windlass-dev/windlass/api/gating/v1alpha1"
	kustomizev1 "github.com/windlass-dev/windlass/api/kustomize/v1"
	"github.com/windlass-dev/windlass/api/meta"
	"github.com/windlass-dev/windlass/internal/kinds"
	"github.com/windlass-dev/windlass/internal/scheme"
)

// monday is the time of the gate pages in the tests.
var monday = time.Date(2026, 3, 23, 10, 0, 0, 0, time.UTC)

// gateObjects are a closed gate with a Friday freeze and a Kustomization
// it holds back, and an open gate nothing names.
func gateObjects() []client.Object {
	freeze := &gatingv1alpha1.Gate{ObjectMeta: metav1.ObjectMeta{Namespace: "team-b", Name: "freeze", Generation: 1},
		Spec: gatingv1alpha1.GateSpec{Default: gatingv1alpha1.GateOpened, Window: &metav1.Duration{Duration: time.Hour},
			Schedules: []gatingv1alpha1.GateSchedule{{Action: gatingv1alpha1.ScheduleClose, Cron: "0 0 * * FRI",
				Duration: metav1.Duration{Duration: 24 * time.Hour}}}}}
	freeze.Status.Conditions = []metav1.Condition{cond(gatingv1alpha1.OpenedCondition, "False", meta.ReconciliationSucceededReason,
		"Gate close requested; reason: <b>incident</b> 42")}
	next := metav1.NewTime(monday.Add(time.Hour))
	freeze.Status.NextTransition = &next
	idle := &gatingv1alpha1.Gate{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "idle", Generation: 1},
		Spec: gatingv1alpha1.GateSpec{Default: gatingv1alpha1.GateOpened}}
	idle.Status.Conditions = []metav1.Condition{cond(gatingv1alpha1.OpenedCondition, "True", meta.ReconciliationSucceededReason, "Gate opened by default")}
	held := &kustomizev1.Kustomization{ObjectMeta: metav1.ObjectMeta{Namespace: "team-b", Name: "db", Generation: 1}}
	held.Spec.Gates = []meta.NamespacedObjectReference{{Name: "freeze"}}
	held.Status.Conditions = []metav1.Condition{cond(meta.ReadyCondition, "True", "ReconciliationSucceeded", "Applied"),
		cond(meta.ApprovedCondition, "False", meta.GateClosedReason, "gate team-b/freeze is closed")}
	return []client.Object{freeze, idle, held}
}

// gateServer serves the pages of gateObjects on monday, acting with c.
func gateServer(c client.Client) *Server {
	return &Server{Reader: c, Kinds: kinds.All, Log: logr.Discard(), Actions: c, Now: func() time.Time { return monday }}
}

func TestGatesPage(t *testing.T) {
	g := NewWithT(t)
	h := gateServer(fake.NewClientBuilder().WithScheme(scheme.New()).WithObjects(gateObjects()...).Build()).Handler()
	code, body := get(g, h, "/gates")
	g.Expect(code).To(Equal(http.StatusOK))
	freeze, _, _ := strings.Cut(body[strings.Index(body, `id="gate-team-b-freeze"`):], "</section>")
	g.Expect(freeze).To(And(ContainSubstring(`<span class="state state-Held">Closed</span>`),
		ContainSubstring("1 consumer, 1 held back"), ContainSubstring("&lt;b&gt;incident&lt;/b&gt; 42"),
		ContainSubstring("Next transition Mon 23 Mar 11:00 UTC"), ContainSubstring("close for 24h0m0s from &#39;0 0 * * FRI&#39; (UTC)")))
	// The week ahead: open until Friday, closed on Friday, open after.
	g.Expect(freeze).To(ContainSubstring("Closes at Fri 27 Mar 00:00 UTC; 2 open and 1 closed stretches this week."))
	g.Expect(strings.Count(freeze, `class="gate-closed"><title>closed from Fri 27 Mar 00:00 UTC to Sat 28 Mar 00:00 UTC (schedule)`)).To(Equal(1))
	g.Expect(strings.Count(freeze, `class="tick"`)).To(Equal(7))
	g.Expect(body).To(ContainSubstring(`id="gate-team-a-idle"`))

	_, body = get(g, h, "/gates?namespace=team-a")
	g.Expect(body).To(ContainSubstring("team-a/idle"))
	g.Expect(body).NotTo(ContainSubstring("team-b/freeze"))
}

func TestGatePageShowsWhatItHoldsAndOpensIt(t *testing.T) {
	g := NewWithT(t)
	c := fake.NewClientBuilder().WithScheme(scheme.New()).WithObjects(gateObjects()...).Build()
	s := gateServer(c)
	h := s.Handler()
	_, body := get(g, h, "/object/Gate/team-b/freeze")
	g.Expect(section(body, "consumers")).To(And(ContainSubstring("Kustomization team-b/db"), ContainSubstring("Held")))
	g.Expect(body).To(And(ContainSubstring(`id="action-open"`), ContainSubstring(`id="action-close"`), ContainSubstring(`id="gate-reason"`)))

	post := func(action, form string) *httptest.ResponseRecorder {
		req := localRequest(http.MethodPost, "/object/Gate/team-b/freeze/"+action, strings.NewReader("csrf="+s.csrf+"&"+form))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec
	}
	rec := post("open", "reason="+url.QueryEscape(" release 1.4 ")+"&for=2h")
	g.Expect(rec.Code).To(Equal(http.StatusSeeOther))
	g.Expect(rec.Header().Get("Location")).To(Equal("/object/Gate/team-b/freeze?done=open"))
	got := &gatingv1alpha1.Gate{}
	g.Expect(c.Get(t.Context(), client.ObjectKey{Namespace: "team-b", Name: "freeze"}, got)).To(Succeed())
	g.Expect(got.Annotations).To(HaveKeyWithValue(gatingv1alpha1.OpenRequestAnnotation, "2026-03-23T10:00:00Z"))
	g.Expect(got.Annotations).To(HaveKeyWithValue(gatingv1alpha1.OpenReasonAnnotation, "release 1.4"))
	g.Expect(got.Spec.Window.Duration).To(Equal(2 * time.Hour))

	g.Expect(post("close", "for=soon").Code).To(Equal(http.StatusBadRequest), "not a duration")
	g.Expect(post("close", "for=-1h").Code).To(Equal(http.StatusBadRequest), "not positive")
	g.Expect(post("close", "").Code).To(Equal(http.StatusSeeOther))
	g.Expect(c.Get(t.Context(), client.ObjectKey{Namespace: "team-b", Name: "freeze"}, got)).To(Succeed())
	g.Expect(got.Annotations).To(HaveKeyWithValue(gatingv1alpha1.CloseRequestAnnotation, "2026-03-23T10:00:00Z"))
	g.Expect(got.Annotations).NotTo(HaveKey(gatingv1alpha1.CloseReasonAnnotation))
	g.Expect(got.Spec.Window.Duration).To(Equal(2*time.Hour), "no For keeps the window")

	// A suspended gate takes no request, as the command line says.
	got.Spec.Suspend = true
	g.Expect(c.Update(t.Context(), got)).To(Succeed())
	_, body = get(g, h, "/object/Gate/team-b/freeze")
	g.Expect(body).To(ContainSubstring(`id="gate-suspended"`))
	g.Expect(body).NotTo(ContainSubstring(`id="action-open"`))
	rec = post("open", "")
	g.Expect(rec.Code).To(Equal(http.StatusBadRequest))
	g.Expect(rec.Body.String()).To(ContainSubstring("suspended, so it takes no request"))

	rec = httptest.NewRecorder()
	req := localRequest(http.MethodPost, "/object/Kustomization/team-b/db/open", strings.NewReader("csrf="+s.csrf))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	h.ServeHTTP(rec, req)
	g.Expect(rec.Code).To(Equal(http.StatusNotFound), "only a gate opens")
}
