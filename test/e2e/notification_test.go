package e2e

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	eventv1 "github.com/windlass-dev/windlass/api/event/v1beta1"
	"github.com/windlass-dev/windlass/api/meta"
	notificationv1 "github.com/windlass-dev/windlass/api/notification/v1"
	notificationv1beta3 "github.com/windlass-dev/windlass/api/notification/v1beta3"
	sourcev1 "github.com/windlass-dev/windlass/api/source/v1"
	"github.com/windlass-dev/windlass/internal/conditions"
	"github.com/windlass-dev/windlass/internal/gitserver"
)

// A signed GitHub push to a Receiver's path makes the controller reconcile
// its GitRepository at once, not at the next interval; a request with a
// wrong signature changes nothing.
func TestReceiver_GitHubPushReconciles(t *testing.T) {
	logControllerOnFailure(t)
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.CreateNamespace(t)
	url, sha := servedRepo(t, "app.git", map[string]string{"app.yaml": "kind: ConfigMap\n"})
	repo := applyGitRepository(g, fmt.Sprintf("apiVersion: source.toolkit.fluxcd.io/v1\nkind: GitRepository\nmetadata:\n  name: app\n  namespace: %s\nspec:\n  interval: 1h\n  url: %s\n  ref:\n    branch: main\n", ns, url))
	waitReady(g, client.ObjectKeyFromObject(repo), "main@sha1:"+sha)

	const token = "w3bh00k-t0ken"
	g.Expect(env.Client.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "webhook-token"},
		StringData: map[string]string{"token": token}})).To(Succeed())
	rcv := &notificationv1.Receiver{}
	g.Expect(yaml.UnmarshalStrict([]byte(fmt.Sprintf(`apiVersion: notification.toolkit.fluxcd.io/v1
kind: Receiver
metadata:
  name: github
  namespace: %s
spec:
  type: github
  events: [push]
  secretRef: {name: webhook-token}
  resources:
  - kind: GitRepository
    name: app
`, ns)), rcv)).To(Succeed())
	g.Expect(env.Client.Create(ctx, rcv)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(rcv), rcv)).To(Succeed())
		g.Expect(conditions.IsTrue(rcv, meta.ReadyCondition)).To(BeTrue())
	}, timeout, interval).Should(Succeed())
	sum := sha256.Sum256([]byte(token + "github" + ns))
	g.Expect(rcv.Status.WebhookPath).To(Equal("/hook/" + hex.EncodeToString(sum[:])))

	push := func(signature string) int {
		body := []byte(`{"ref":"refs/heads/main","repository":{"name":"app","full_name":"org/app"}}`)
		req, err := http.NewRequest(http.MethodPost, "http://"+ctrlProc.ReceiverAddr+rcv.Status.WebhookPath, bytes.NewReader(body))
		g.Expect(err).NotTo(HaveOccurred())
		if signature == "" {
			mac := hmac.New(sha256.New, []byte(token))
			mac.Write(body)
			signature = "sha256=" + hex.EncodeToString(mac.Sum(nil))
		}
		req.Header.Set("X-Hub-Signature-256", signature)
		req.Header.Set("X-GitHub-Event", "push")
		req.Header.Set("Content-Type", "application/json")
		resp, err := httpClient.Do(req)
		g.Expect(err).NotTo(HaveOccurred())
		_ = resp.Body.Close()
		return resp.StatusCode
	}
	// The server finds the Receiver by its path in the controller's cache,
	// which sees the status written a moment after the API server has it:
	// until then the path is unknown (404). A wrong signature changes
	// nothing, so the story may send it until the path is known.
	g.Eventually(func() int { return push("sha256=" + strings.Repeat("0", 64)) }, timeout, interval).
		Should(Equal(http.StatusUnauthorized))
	got := &sourcev1.GitRepository{}
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(repo), got)).To(Succeed())
	g.Expect(got.Annotations).NotTo(HaveKey(meta.ReconcileRequestAnnotation))

	g.Expect(push("")).To(Equal(http.StatusOK))
	g.Eventually(func(g Gomega) {
		g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(repo), got)).To(Succeed())
		token := got.Annotations[meta.ReconcileRequestAnnotation]
		g.Expect(token).NotTo(BeEmpty())
		g.Expect(got.Status.LastHandledReconcileAt).To(Equal(token), "the request was reconciled")
	}, 10*time.Second, 100*time.Millisecond).Should(Succeed())
}

// hookServer records the wire events a generic Provider posts.
type hookServer struct {
	mu     sync.Mutex
	events []eventv1.Event
}

func (h *hookServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var e eventv1.Event
	body, _ := io.ReadAll(r.Body)
	if json.Unmarshal(body, &e) == nil {
		h.mu.Lock()
		h.events = append(h.events, e)
		h.mu.Unlock()
	}
}

func (h *hookServer) messages() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	for _, e := range h.events {
		out = append(out, e.InvolvedObject.Kind+"/"+e.InvolvedObject.Name+" "+e.Severity+": "+e.Message)
	}
	return out
}

// An Alert for failures in a namespace hears of a GitRepository that
// fails, once, and then that it is resolved when it is fixed.
func TestAlert_FailureThenResolved(t *testing.T) {
	logControllerOnFailure(t)
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.CreateNamespace(t)
	hooks := &hookServer{}
	srv := httptest.NewServer(hooks)
	t.Cleanup(srv.Close)

	provider := &notificationv1beta3.Provider{}
	g.Expect(yaml.UnmarshalStrict([]byte(fmt.Sprintf("apiVersion: notification.toolkit.fluxcd.io/v1beta3\nkind: Provider\nmetadata:\n  name: oncall\n  namespace: %s\nspec:\n  type: generic\n  address: %s\n", ns, srv.URL)), provider)).To(Succeed())
	g.Expect(env.Client.Create(ctx, provider)).To(Succeed())
	alert := &notificationv1beta3.Alert{}
	g.Expect(yaml.UnmarshalStrict([]byte(fmt.Sprintf("apiVersion: notification.toolkit.fluxcd.io/v1beta3\nkind: Alert\nmetadata:\n  name: failures\n  namespace: %s\nspec:\n  providerRef: {name: oncall}\n  eventSeverity: error\n  eventSources:\n  - kind: GitRepository\n    name: '*'\n", ns)), alert)).To(Succeed())
	g.Expect(env.Client.Create(ctx, alert)).To(Succeed())

	url, sha := servedRepo(t, "svc.git", map[string]string{"svc.yaml": "kind: ConfigMap\n"})
	repo := applyGitRepository(g, fmt.Sprintf("apiVersion: source.toolkit.fluxcd.io/v1\nkind: GitRepository\nmetadata:\n  name: svc\n  namespace: %s\nspec:\n  interval: 1h\n  url: %s\n  ref:\n    branch: no-such-branch\n", ns, url))
	// The failure is retried with backoff until the Alert's rule is in
	// place and it is sent; the same failure again is not sent again.
	g.Eventually(hooks.messages, timeout, interval).Should(ContainElement(HavePrefix("GitRepository/svc error: ")))

	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(repo), repo)).To(Succeed())
	repo.Spec.Reference.Branch = "main"
	g.Expect(env.Client.Update(ctx, repo)).To(Succeed())
	waitReady(g, client.ObjectKeyFromObject(repo), "main@sha1:"+sha)
	g.Eventually(hooks.messages, timeout, interval).Should(ContainElement(HavePrefix("GitRepository/svc info: Resolved: ")))
	var failures int
	for _, m := range hooks.messages() {
		if strings.HasPrefix(m, "GitRepository/svc error: ") {
			failures++
		}
	}
	g.Expect(failures).To(Equal(1), "the same failure is sent once in the window: %v", hooks.messages())
}

// eventsOf returns the wire events the hook server received about the
// object kind/name.
func (h *hookServer) eventsOf(kind, name string) []eventv1.Event {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []eventv1.Event
	for _, e := range h.events {
		if e.InvolvedObject.Kind == kind && e.InvolvedObject.Name == name {
			out = append(out, e)
		}
	}
	return out
}

// The story of seed 001, set up with the command line alone: the on-call
// team hears of every failure in the namespace, once, and of its
// resolution; the frontend team hears of each new frontend revision and of
// nothing else; a push announced by a signed GitHub webhook (sent by
// `windlass trigger receiver`) is applied without waiting for an interval.
func TestNotifications_Seed001Story(t *testing.T) {
	logControllerOnFailure(t)
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.CreateNamespace(t)
	oncall, frontendTeam := &hookServer{}, &hookServer{}
	for _, h := range []*hookServer{oncall, frontendTeam} {
		srv := httptest.NewServer(h)
		t.Cleanup(srv.Close)
		name := "oncall"
		if h == frontendTeam {
			name = "frontend-team"
		}
		mustRunCLI(g, "create", "alert-provider", name, "-n", ns, "--type", "generic", "--address", srv.URL)
	}
	mustRunCLI(g, "create", "alert", "prod-failures", "-n", ns, "--provider-ref", "oncall", "--event-severity", "error",
		"--event-source", "Kustomization/*", "--event-source", "GitRepository/*")
	mustRunCLI(g, "create", "alert", "frontend-releases", "-n", ns, "--provider-ref", "frontend-team",
		"--event-source", "Kustomization/frontend")

	gitSrv := gitserver.NewForTest(t)
	base := gitSrv.MustStartHTTP(t)
	repo := gitSrv.MustInitRepo(t, "fleet.git", "main")
	config := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\ndata:\n  version: %q\n"
	sha := repo.MustCommit(t, "main", map[string]string{
		"frontend/app.yaml": fmt.Sprintf(config, "frontend", "1"), "backend/app.yaml": fmt.Sprintf(config, "backend", "1")}, "v1")
	applyGitRepository(g, fmt.Sprintf("apiVersion: source.toolkit.fluxcd.io/v1\nkind: GitRepository\nmetadata: {name: fleet, namespace: %s}\n"+
		"spec: {interval: 1h, url: %s/fleet.git, ref: {branch: main}}\n", ns, base))
	for _, app := range []string{"frontend", "backend"} {
		mustRunCLI(g, "create", "kustomization", app, "-n", ns, "--source", "GitRepository/fleet", "--path", "./"+app,
			"--prune", "--target-namespace", ns, "--interval", "1h", "--timeout", "60s")
	}
	waitApplied(g, client.ObjectKey{Namespace: ns, Name: "frontend"}, "main@sha1:"+sha)

	const token = "s1gned-push-t0ken"
	g.Expect(env.Client.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "github-webhook"},
		StringData: map[string]string{"token": token}})).To(Succeed())
	mustRunCLI(g, "create", "receiver", "github", "-n", ns, "--type", "github", "--event", "push",
		"--resource", "GitRepository/fleet", "--secret-ref", "github-webhook")
	push := func(files map[string]string, msg string) string {
		sha := repo.MustCommit(t, "main", files, msg)
		start := time.Now()
		mustRunCLI(g, "trigger", "receiver", "github", "-n", ns, "--address", "http://"+ctrlProc.ReceiverAddr)
		waitRevision(g, ns, sha)
		t.Logf("%s: from the webhook to the artifact of %s: %s", msg, sha[:8], time.Since(start).Round(time.Millisecond))
		return sha
	}

	sha2 := push(map[string]string{"frontend/app.yaml": fmt.Sprintf(config, "frontend", "2")}, "frontend v2")
	waitApplied(g, client.ObjectKey{Namespace: ns, Name: "frontend"}, "main@sha1:"+sha2)
	g.Eventually(func(g Gomega) {
		var revisions []string
		for _, e := range frontendTeam.eventsOf("Kustomization", "frontend") {
			revision, _ := e.Revision()
			revisions = append(revisions, revision)
		}
		g.Expect(revisions).To(ContainElement("main@sha1:" + sha2))
	}, timeout, interval).Should(Succeed())

	push(map[string]string{"backend/app.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: [not, a, map]\n"}, "broken backend")
	g.Eventually(func() []string { return messagesOf(oncall, "Kustomization", "backend") }, timeout, interval).
		Should(ContainElement(HavePrefix("error: ")))
	fixed := push(map[string]string{"backend/app.yaml": fmt.Sprintf(config, "backend", "2")}, "fixed backend")
	waitApplied(g, client.ObjectKey{Namespace: ns, Name: "backend"}, "main@sha1:"+fixed)
	g.Eventually(func() []string { return messagesOf(oncall, "Kustomization", "backend") }, timeout, interval).
		Should(ContainElement(HavePrefix("info: Resolved: ")))

	failures := 0
	for _, m := range messagesOf(oncall, "Kustomization", "backend") {
		if strings.HasPrefix(m, "error: ") {
			failures++
		}
	}
	g.Expect(failures).To(Equal(1), "one failure message, however often it was retried: %v", oncall.messages())
	g.Expect(frontendTeam.eventsOf("Kustomization", "backend")).To(BeEmpty(), "the frontend team hears of the frontend only")
	for _, m := range oncall.messages() {
		g.Expect(m).To(Or(ContainSubstring(" error: "), ContainSubstring(" info: Resolved: ")), "on-call hears of failures and their resolution only")
	}
}

// messagesOf returns "severity: message" of the events h received about
// kind/name.
func messagesOf(h *hookServer, kind, name string) []string {
	var out []string
	for _, e := range h.eventsOf(kind, name) {
		out = append(out, e.Severity+": "+e.Message)
	}
	return out
}

// waitRevision waits until the GitRepository ns/fleet has the artifact of
// the commit sha of main.
func waitRevision(g *WithT, ns, sha string) {
	g.Eventually(func(g Gomega) {
		repo := &sourcev1.GitRepository{}
		g.Expect(env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "fleet"}, repo)).To(Succeed())
		g.Expect(repo.Status.Artifact).NotTo(BeNil())
		g.Expect(repo.Status.Artifact.Revision).To(Equal("main@sha1:" + sha))
	}, timeout, 20*time.Millisecond).Should(Succeed())
}
