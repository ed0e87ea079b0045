package ui

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	helmv2 "github.com/windlass-dev/windlass/api/helm/v2"
	kustomizev1 "github.com/windlass-dev/windlass/api/kustomize/v1"
	"github.com/windlass-dev/windlass/api/meta"
	notifyv1beta3 "github.com/windlass-dev/windlass/api/notification/v1beta3"
	sourcev1 "github.com/windlass-dev/windlass/api/source/v1"
	"github.com/windlass-dev/windlass/internal/kinds"
	"github.com/windlass-dev/windlass/internal/scheme"
	"github.com/windlass-dev/windlass/internal/shard"
)

// cond returns a condition of obj's generation.
func cond(t string, status metav1.ConditionStatus, reason, msg string) metav1.Condition {
	return metav1.Condition{Type: t, Status: status, Reason: reason, Message: msg, ObservedGeneration: 1}
}

// testServer serves the pages of objs.
func testServer(objs ...client.Object) http.Handler {
	c := fake.NewClientBuilder().WithScheme(scheme.New()).WithObjects(objs...).Build()
	return (&Server{Reader: c, Kinds: kinds.All, Log: logr.Discard()}).Handler()
}

// get returns the status and body of GET path.
func get(g Gomega, h http.Handler, path string) (int, string) {
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, localRequest(http.MethodGet, path, nil))
	body, err := io.ReadAll(rec.Result().Body)
	g.Expect(err).NotTo(HaveOccurred())
	return rec.Code, string(body)
}

// localRequest is a request to the UI on 127.0.0.1:9880.
func localRequest(method, path string, body io.Reader) *http.Request {
	req := httptest.NewRequest(method, path, body)
	req.Host = "127.0.0.1:9880"
	return req
}

// section returns the part of body from the element with id to the end of
// its table.
func section(body, id string) string {
	_, rest, found := strings.Cut(body, `id="`+id+`"`)
	if !found {
		return ""
	}
	part, _, _ := strings.Cut(rest, "</table>")
	return part
}

func testObjects() []client.Object {
	failing := &kustomizev1.Kustomization{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "app", Generation: 1}}
	failing.Status.Conditions = []metav1.Condition{cond(meta.ReadyCondition, "False", kustomizev1.BuildFailedReason,
		`kustomize build failed: <script>alert("x")</script>`)}
	failing.Status.LastAppliedRevision, failing.Status.LastAttemptedRevision = "main@sha1:1111", "main@sha1:2222"
	failing.Status.Inventory = &kustomizev1.ResourceInventory{Entries: []kustomizev1.ResourceRef{{ID: "team-a_web__ConfigMap", Version: "v1"}}}
	held := &kustomizev1.Kustomization{ObjectMeta: metav1.ObjectMeta{Namespace: "team-b", Name: "db", Generation: 1}}
	held.Status.Conditions = []metav1.Condition{cond(meta.ReadyCondition, "True", "ReconciliationSucceeded", "Applied"),
		cond(meta.ApprovedCondition, "False", meta.GateClosedReason, "gate team-b/freeze is closed")}
	ready := &sourcev1.GitRepository{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "app", Generation: 1}}
	ready.Status.Conditions = []metav1.Condition{cond(meta.ReadyCondition, "True", "Succeeded", "stored artifact")}
	release := &helmv2.HelmRelease{ObjectMeta: metav1.ObjectMeta{Namespace: "team-b", Name: "cache", Generation: 1}}
	release.Spec.Suspend = true
	release.Status.History = helmv2.Snapshots{{Name: "cache", Version: 2, ChartName: "redis", ChartVersion: "1.2.0", Status: "deployed"}}
	return []client.Object{failing, held, ready, release}
}

func TestOverviewShowsWhatNeedsAttention(t *testing.T) {
	g := NewWithT(t)
	h := testServer(testObjects()...)
	code, body := get(g, h, "/")
	g.Expect(code).To(Equal(http.StatusOK))

	attention := section(body, "attention")
	g.Expect(attention).To(ContainSubstring("Kustomization team-a/app"))
	g.Expect(attention).To(ContainSubstring(kustomizev1.BuildFailedReason))
	g.Expect(attention).To(ContainSubstring("&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;"), "escaped")
	g.Expect(body).NotTo(ContainSubstring("<script>"))
	g.Expect(section(body, "held")).To(And(ContainSubstring("Kustomization team-b/db"), ContainSubstring("gate team-b/freeze is closed")))
	counts := section(body, "counts")
	g.Expect(counts).To(MatchRegexp(`<td><a href="/\?kind=Kustomization">Kustomization</a></td><td>2</td>`))
	g.Expect(counts).To(ContainSubstring(`href="/?kind=HelmRelease&amp;state=Suspended">1</a>`))
	g.Expect(section(body, "objects")).To(ContainSubstring("GitRepository team-a/app"))

	_, body = get(g, h, "/?state=Ready")
	objects := section(body, "objects")
	g.Expect(objects).To(ContainSubstring("GitRepository team-a/app"))
	g.Expect(objects).NotTo(ContainSubstring("Kustomization"))
	_, body = get(g, h, "/?namespace=team-b&q=ca")
	objects = section(body, "objects")
	g.Expect(objects).To(ContainSubstring("HelmRelease team-b/cache"))
	g.Expect(objects).NotTo(Or(ContainSubstring("team-a"), ContainSubstring("team-b/db")))
}

// TestOverviewNamesTheShard: when the replicas share the objects, the
// objects' table names the replica that holds each, and filters by it;
// without sharing it has no such column.
func TestOverviewNamesTheShard(t *testing.T) {
	g := NewWithT(t)
	_, body := get(g, testServer(testObjects()...), "/")
	g.Expect(section(body, "objects")).NotTo(ContainSubstring("<th>Shard</th>"), "no column when nothing is shared")

	objs := testObjects()
	objs[0].SetLabels(map[string]string{shard.BucketLabel: "0"})
	objs[1].SetLabels(map[string]string{shard.BucketLabel: "1"})
	objs[2].SetLabels(map[string]string{shard.BucketLabel: "1"})
	c := fake.NewClientBuilder().WithScheme(scheme.New()).
		WithObjects(append(objs, &notifyv1beta3.Provider{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "slack"}})...).Build()
	holders := map[string]string{"0": "windlass-0", "1": "windlass-1"}
	h := (&Server{Reader: c, Kinds: kinds.All, Log: logr.Discard(),
		Holder: func(obj client.Object) string { return holders[obj.GetLabels()[shard.BucketLabel]] }}).Handler()
	_, body = get(g, h, "/")
	objects := section(body, "objects")
	g.Expect(objects).To(ContainSubstring("<th>Shard</th>"))
	g.Expect(objects).To(MatchRegexp(`Kustomization team-a/app</a></td>\s*<td[^>]*>Failing</td>.*</td><td class="shard">windlass-0</td>`))
	g.Expect(objects).To(MatchRegexp(`GitRepository team-a/app</a></td>.*\n?.*<td class="shard">windlass-1</td>`))
	g.Expect(objects).To(MatchRegexp(`Provider team-a/slack</a></td>.*\n?.*<td class="shard"><span class="muted">every replica</span></td>`))
	g.Expect(body).To(ContainSubstring(`<select name="shard"><option value="">all</option><option>windlass-0</option><option>windlass-1</option></select>`))

	_, body = get(g, h, "/?shard=windlass-1")
	objects = section(body, "objects")
	g.Expect(objects).To(And(ContainSubstring("GitRepository team-a/app"), ContainSubstring("Kustomization team-b/db")))
	g.Expect(objects).NotTo(Or(ContainSubstring("Kustomization team-a/app"), ContainSubstring("HelmRelease")))
}

func TestObjectPage(t *testing.T) {
	g := NewWithT(t)
	h := testServer(testObjects()...)
	code, body := get(g, h, "/object/Kustomization/team-a/app")
	g.Expect(code).To(Equal(http.StatusOK))
	g.Expect(body).To(ContainSubstring(`<span id="state" class="state state-Failing">Failing</span>`))
	g.Expect(section(body, "conditions")).To(ContainSubstring(kustomizev1.BuildFailedReason))
	g.Expect(section(body, "inventory")).To(ContainSubstring("<td>ConfigMap/team-a/web</td>"))
	g.Expect(section(body, "revisions")).To(MatchRegexp(`<th>Applied</th><td>main@sha1:1111</td>.*\n?.*<th>Attempted</th><td>main@sha1:2222</td>`))
	g.Expect(body).NotTo(ContainSubstring("<script>"))

	_, body = get(g, h, "/object/HelmRelease/team-b/cache")
	g.Expect(section(body, "history")).To(And(ContainSubstring("redis 1.2.0"), ContainSubstring("deployed")))

	for path, want := range map[string]int{
		"/object/Kustomization/team-a/nope": http.StatusNotFound,
		"/object/Nothing/team-a/app":        http.StatusNotFound,
		"/static/style.css":                 http.StatusOK,
	} {
		code, _ := get(g, h, path)
		g.Expect(code).To(Equal(want), path)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, localRequest(http.MethodGet, "/", nil))
	g.Expect(rec.Header().Get("Content-Security-Policy")).To(ContainSubstring("frame-ancestors 'none'"))

	// DNS rebinding: a name an attacker points at 127.0.0.1 gets nothing.
	for host, want := range map[string]int{"evil.example:9880": http.StatusMisdirectedRequest, "evil.example": http.StatusMisdirectedRequest,
		"localhost:9880": http.StatusOK, "[::1]:9880": http.StatusOK, "127.0.0.1": http.StatusOK} {
		req := httptest.NewRequest(http.MethodGet, "/", nil)
		req.Host = host
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		g.Expect(rec.Code).To(Equal(want), host)
	}
}

func TestEventsTellOpenPagesOfChanges(t *testing.T) {
	g := NewWithT(t)
	changes := &Changes{waiting: map[chan struct{}]bool{}}
	srv := httptest.NewServer((&Server{Reader: fake.NewClientBuilder().WithScheme(scheme.New()).Build(), Kinds: kinds.All,
		Log: logr.Discard(), Changes: changes}).Handler())
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/events")
	g.Expect(err).NotTo(HaveOccurred())
	defer resp.Body.Close()
	g.Expect(resp.Header.Get("Content-Type")).To(Equal("text/event-stream"))
	lines := make(chan string, 16)
	go func() {
		buf := make([]byte, 256)
		for {
			n, err := resp.Body.Read(buf)
			if n > 0 {
				lines <- string(buf[:n])
			}
			if err != nil {
				close(lines)
				return
			}
		}
	}()
	g.Eventually(lines).Should(Receive(ContainSubstring(": live")))
	g.Eventually(func() int { changes.mu.Lock(); defer changes.mu.Unlock(); return len(changes.waiting) }).Should(Equal(1))
	for range 5 { // a burst: one notice
		changes.notify()
	}
	g.Eventually(lines, 5*time.Second).Should(Receive(Equal("event: changed\ndata: \n\n")))
	g.Consistently(lines, 2*settle).ShouldNot(Receive())

	// A page rendered before a change: its stream says so at once.
	_, page := get(g, srv.Config.Handler, "/")
	g.Expect(page).To(ContainSubstring(fmt.Sprintf(`<body data-changes="%d">`, changes.Count())))
	late, err := (&http.Client{Timeout: 10 * time.Second}).Get(fmt.Sprintf("%s/events?since=%d", srv.URL, changes.Count()-1))
	g.Expect(err).NotTo(HaveOccurred())
	defer late.Body.Close()
	buf := make([]byte, 256)
	var got strings.Builder
	for !strings.Contains(got.String(), "event: changed") {
		n, err := late.Body.Read(buf)
		g.Expect(err).NotTo(HaveOccurred())
		got.Write(buf[:n])
	}

	code, _ := get(g, testServer(), "/events")
	g.Expect(code).To(Equal(http.StatusNotFound), "no live updates without Changes")
}

func TestActionsAreTheUsersAndNeedTheirPage(t *testing.T) {
	g := NewWithT(t)
	c := fake.NewClientBuilder().WithScheme(scheme.New()).WithObjects(testObjects()...).Build()
	s := &Server{Reader: c, Kinds: kinds.All, Log: logr.Discard(), Actions: c}
	h := s.Handler()
	_, body := get(g, h, "/object/Kustomization/team-a/app")
	g.Expect(body).To(ContainSubstring(`id="action-suspend"`))
	g.Expect(body).To(ContainSubstring(`name="csrf" value="` + s.csrf + `"`))

	post := func(path, csrf string, headers map[string]string) *httptest.ResponseRecorder {
		req := localRequest(http.MethodPost, path, strings.NewReader("csrf="+csrf))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		for k, v := range headers {
			req.Header.Set(k, v)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec
	}
	suspended := func() bool {
		k := &kustomizev1.Kustomization{}
		g.Expect(c.Get(t.Context(), client.ObjectKey{Namespace: "team-a", Name: "app"}, k)).To(Succeed())
		return k.Spec.Suspend
	}
	path := "/object/Kustomization/team-a/app/suspend"
	g.Expect(post(path, "", nil).Code).To(Equal(http.StatusForbidden), "without the page's token")
	g.Expect(post(path, "forged", nil).Code).To(Equal(http.StatusForbidden))
	g.Expect(post(path, s.csrf, map[string]string{"Sec-Fetch-Site": "cross-site"}).Code).To(Equal(http.StatusForbidden))
	g.Expect(post(path, s.csrf, map[string]string{"Origin": "http://evil.example"}).Code).To(Equal(http.StatusForbidden))
	g.Expect(suspended()).To(BeFalse())

	rec := post(path, s.csrf, map[string]string{"Sec-Fetch-Site": "same-origin", "Origin": "http://127.0.0.1:9880"})
	g.Expect(rec.Code).To(Equal(http.StatusSeeOther))
	g.Expect(rec.Header().Get("Location")).To(Equal("/object/Kustomization/team-a/app?done=suspend"))
	g.Expect(suspended()).To(BeTrue())
	g.Expect(post("/object/Kustomization/team-a/app/resume", s.csrf, nil).Code).To(Equal(http.StatusSeeOther))
	g.Expect(suspended()).To(BeFalse())
	g.Expect(post("/object/Kustomization/team-a/app/delete", s.csrf, nil).Code).To(Equal(http.StatusNotFound))

	readOnly := testServer(testObjects()...)
	_, body = get(g, readOnly, "/object/Kustomization/team-a/app")
	g.Expect(body).NotTo(ContainSubstring("action-"))
	req := localRequest(http.MethodPost, path, nil)
	rec = httptest.NewRecorder()
	readOnly.ServeHTTP(rec, req)
	g.Expect(rec.Code).To(Equal(http.StatusForbidden))
}
