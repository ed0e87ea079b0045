package ui

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	kustomizev1 "github.com/windlass-dev/windlass/api/kustomize/v1"
	"github.com/windlass-dev/windlass/internal/event"
	"github.com/windlass-dev/windlass/internal/kinds"
	"github.com/windlass-dev/windlass/internal/scheme"
)

// kustomization returns a Kustomization of ns and name, for events.
func kustomization(ns, name string) *kustomizev1.Kustomization {
	return &kustomizev1.Kustomization{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
}

func TestRecentKeepsTheLatestEvents(t *testing.T) {
	g := NewWithT(t)
	r := NewRecent(scheme.New(), 3)
	for i := range 5 {
		r.Forward(context.Background(), kustomization("team-a", fmt.Sprint("app-", i)), event.Event{Type: event.TypeNormal, Reason: "Applied",
			Message: strings.Repeat("x", i*1000)})
	}
	all := r.newest(10, func(recentEvent) bool { return true })
	g.Expect(all).To(HaveLen(3), "bounded")
	g.Expect([]string{all[0].Name, all[1].Name, all[2].Name}).To(Equal([]string{"app-4", "app-3", "app-2"}), "newest first")
	g.Expect(all[0].Kind).To(Equal("Kustomization"))
	g.Expect(all[0].Message).To(HaveLen(maxEventMessage+len("…")), "a long message is cut")
	g.Expect(r.newest(1, func(e recentEvent) bool { return e.Name == "app-2" })).To(HaveLen(1))
	g.Expect((*Recent)(nil).newest(1, func(recentEvent) bool { return true })).To(BeEmpty())
}

func TestPagesShowRecentEventsTheUserMaySee(t *testing.T) {
	g := NewWithT(t)
	recent := NewRecent(scheme.New(), 100)
	recent.Forward(context.Background(), kustomization("team-a", "app"), event.Event{Type: event.TypeWarning, Reason: kustomizev1.BuildFailedReason,
		Message: `kustomize build failed: <script>x</script>`})
	recent.Forward(context.Background(), kustomization("team-b", "db"), event.Event{Type: event.TypeNormal, Reason: "ReconciliationSucceeded",
		Message: "Applied revision: main@sha1:1234"})

	c := fake.NewClientBuilder().WithScheme(scheme.New()).WithObjects(testObjects()...).Build()
	h := (&Server{Reader: c, Kinds: kinds.All, Log: logr.Discard(), Events: recent}).Handler()
	_, body := get(g, h, "/")
	events := section(body, "events")
	g.Expect(events).To(And(ContainSubstring("Kustomization team-a/app"), ContainSubstring("Kustomization team-b/db"),
		ContainSubstring("&lt;script&gt;")))
	g.Expect(strings.Index(events, "team-b/db")).To(BeNumerically("<", strings.Index(events, "team-a/app")), "newest first")
	_, body = get(g, h, "/?namespace=team-a")
	g.Expect(section(body, "events")).NotTo(ContainSubstring("team-b"))
	_, body = get(g, h, "/object/Kustomization/team-a/app")
	g.Expect(section(body, "events")).To(And(ContainSubstring(kustomizev1.BuildFailedReason), Not(ContainSubstring("team-b"))))

	_, body = get(g, testServer(testObjects()...), "/")
	g.Expect(body).To(ContainSubstring("keeps no events"), "a UI apart from the controllers says so")

	// Signed in, alice sees the events of team-a only.
	var reviews atomic.Int32
	rc := reviewingClient(&reviews, map[string]bool{"team-a": true})
	s := &Server{Reader: rc, Kinds: kinds.All, Log: logr.Discard(), Events: recent, SignIn: &SignIn{Client: rc}}
	signed := s.Handler()
	sealed, err := s.signer.seal(sessionCookie, User{Name: "alice", ID: "s", Expires: time.Now().Add(time.Hour).Unix()})
	g.Expect(err).NotTo(HaveOccurred())
	req := localRequest(http.MethodGet, "/", nil)
	req.AddCookie(&http.Cookie{Name: sessionCookie, Value: sealed})
	rec := httptest.NewRecorder()
	signed.ServeHTTP(rec, req)
	g.Expect(rec.Code).To(Equal(http.StatusOK))
	events = section(rec.Body.String(), "events")
	g.Expect(events).To(ContainSubstring("team-a/app"))
	g.Expect(events).NotTo(ContainSubstring("team-b"), "alice may not list in team-b")
}
