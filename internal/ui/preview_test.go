package ui

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/windlass-dev/windlass/internal/kinds"
	"github.com/windlass-dev/windlass/internal/plan"
	"github.com/windlass-dev/windlass/internal/scheme"
)

// previewOf returns a Previewer that answers p, or err, counting calls.
func previewOf(calls *atomic.Int32, p *plan.Preview, err error) Previewer {
	return func(context.Context, types.NamespacedName) (*plan.Preview, error) {
		calls.Add(1)
		return p, err
	}
}

// TestPreviewPage: the object page of a kind with a preview links to it;
// the preview lists each change, colours a diff's lines and is no live
// page; a failure says why; previews beyond maxPreviews wait their turn;
// a kind without a preview has none.
func TestPreviewPage(t *testing.T) {
	g := NewWithT(t)
	var calls atomic.Int32
	p := &plan.Preview{Revision: "main@sha1:2222", Objects: 3, Changes: []plan.Change{
		{Subject: "ConfigMap/team-a/web", ID: "team-a_web__ConfigMap", Action: plan.Drifted, Diff: "@@ -1 +1 @@\n-  value: \"1\"\n+  value: \"<2>\"\n"},
		{Subject: "ConfigMap/team-a/new", ID: "team-a_new__ConfigMap", Action: plan.Created}}}
	s := testUIServer(previewOf(&calls, p, nil))
	h := s.Handler()

	_, body := get(g, h, "/object/Kustomization/team-a/app")
	g.Expect(body).To(ContainSubstring(`<a id="preview-link" href="/object/Kustomization/team-a/app/preview">`))
	_, body = get(g, h, "/object/GitRepository/team-a/app")
	g.Expect(body).NotTo(ContainSubstring(`preview-link`))

	code, body := get(g, h, "/object/Kustomization/team-a/app/preview")
	g.Expect(code).To(Equal(http.StatusOK))
	g.Expect(body).To(ContainSubstring("Revision <strong>main@sha1:2222</strong>: 3 objects built,\n2 would change."))
	g.Expect(body).To(ContainSubstring(`<span class="diff-add">&#43;  value: &#34;&lt;2&gt;&#34;</span>`))
	g.Expect(body).To(ContainSubstring(`<span class="change-action">created</span> ConfigMap/team-a/new`))
	g.Expect(body).NotTo(ContainSubstring("live.js"), "an update would run the preview again")
	g.Expect(calls.Load()).To(Equal(int32(1)))

	for range maxPreviews {
		s.previews <- struct{}{}
	}
	code, _ = get(g, h, "/object/Kustomization/team-a/app/preview")
	g.Expect(code).To(Equal(http.StatusServiceUnavailable))
	g.Expect(calls.Load()).To(Equal(int32(1)), "no preview beyond the bound")
	for range maxPreviews {
		<-s.previews
	}

	code, _ = get(g, h, "/object/GitRepository/team-a/app/preview")
	g.Expect(code).To(Equal(http.StatusNotFound))
	code, _ = get(g, h, "/object/Kustomization/team-a/nope/preview")
	g.Expect(code).To(Equal(http.StatusNotFound))

	failing := testUIServer(previewOf(&calls, nil, errors.New("kustomize build failed: missing.yaml, from https://bob:hunter2@git.example/app?token=t0ps3cret")))
	_, body = get(g, failing.Handler(), "/object/Kustomization/team-a/app/preview")
	g.Expect(body).To(ContainSubstring(`<p id="preview-error" class="message">The preview failed: kustomize build failed: missing.yaml, from https://git.example/app</p>`))
	g.Expect(body).NotTo(Or(ContainSubstring("hunter2"), ContainSubstring("t0ps3cret")), "no credential of a URL is shown")
}

// TestPreviewHidesWhatTheUserMayNotRead: the dry-run runs as the
// Kustomization's identity, so a signed-in user sees the diff of an object
// only when the API server says they may get it.
func TestPreviewHidesWhatTheUserMayNotRead(t *testing.T) {
	g := NewWithT(t)
	var reviews, calls atomic.Int32
	c := reviewingClient(&reviews, map[string]bool{"team-a": true})
	p := &plan.Preview{Revision: "r", Objects: 2, Changes: []plan.Change{
		{Subject: "ConfigMap/team-a/web", ID: "team-a_web__ConfigMap", Action: plan.Drifted, Diff: "@@ -1 +1 @@\n-a: readable\n+a: b\n"},
		{Subject: "ConfigMap/team-b/db", ID: "team-b_db__ConfigMap", Action: plan.Drifted, Diff: "@@ -1 +1 @@\n-a: unreadable-value\n+a: b\n"}}}
	s := &Server{Reader: c, Kinds: kinds.All, Log: logr.Discard(), SignIn: &SignIn{Client: c, Tokens: true},
		Previews: map[string]Previewer{"Kustomization": previewOf(&calls, p, nil)}}
	h := s.Handler()
	alice := User{Name: "alice", ID: "session-1", Expires: time.Now().Add(time.Hour).Unix()}
	sealed, err := s.signer.seal(sessionCookie, alice)
	g.Expect(err).NotTo(HaveOccurred())
	req := localRequest(http.MethodGet, "/object/Kustomization/team-a/app/preview", nil)
	req.AddCookie(&http.Cookie{Name: sessionCookie, Value: sealed})
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	g.Expect(rec.Code).To(Equal(http.StatusOK), rec.Body.String())
	body := rec.Body.String()
	g.Expect(body).To(ContainSubstring("readable"))
	g.Expect(body).To(ContainSubstring("ConfigMap/team-b/db"))
	g.Expect(body).NotTo(ContainSubstring("unreadable-value"))
	g.Expect(body).To(ContainSubstring("You may not read this object, so its diff is not shown."))
}

// testUIServer serves testObjects with a Kustomization preview.
func testUIServer(p Previewer) *Server {
	c := fake.NewClientBuilder().WithScheme(scheme.New()).WithObjects(testObjects()...).Build()
	return &Server{Reader: c, Kinds: kinds.All, Log: logr.Discard(), Previews: map[string]Previewer{"Kustomization": p}}
}
