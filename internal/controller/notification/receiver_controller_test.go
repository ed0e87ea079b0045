package notification

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gatingv1alpha1 "github.com/windlass-dev/windlass/api/gating/v1alpha1"
	kustomizev1 "github.com/windlass-dev/windlass/api/kustomize/v1"
	"github.com/windlass-dev/windlass/api/meta"
	notificationv1 "github.com/windlass-dev/windlass/api/notification/v1"
	sourcev1 "github.com/windlass-dev/windlass/api/source/v1"
	"github.com/windlass-dev/windlass/internal/conditions"
	"github.com/windlass-dev/windlass/internal/metrics"
	"github.com/windlass-dev/windlass/internal/reconcile/outcome"
	"github.com/windlass-dev/windlass/internal/testutil"
)

// githubPush is a push event as GitHub documents it, shortened to one
// commit.
const githubPush = `{
  "ref": "refs/heads/main",
  "before": "6113728f27ae82c7b1a177c8d03f9e96e0adf246",
  "after": "0d1a26e67d8f5eaf1f6ba5c57fc3c7d91ac0fd1c",
  "created": false, "deleted": false, "forced": false,
  "compare": "https://github.com/acme/webapp/compare/6113728f27ae...0d1a26e67d8f",
  "repository": {
    "id": 1296269, "name": "webapp", "full_name": "acme/webapp", "private": false,
    "owner": {"login": "acme", "id": 1},
    "html_url": "https://github.com/acme/webapp",
    "clone_url": "https://github.com/acme/webapp.git",
    "default_branch": "main"
  },
  "pusher": {"name": "octocat", "email": "octocat@github.com"},
  "sender": {"login": "octocat", "id": 583231},
  "commits": [{
    "id": "0d1a26e67d8f5eaf1f6ba5c57fc3c7d91ac0fd1c",
    "message": "Update the frontend image",
    "timestamp": "2026-03-27T08:00:00Z",
    "url": "https://github.com/acme/webapp/commit/0d1a26e67d8f5eaf1f6ba5c57fc3c7d91ac0fd1c",
    "author": {"name": "Octo Cat", "email": "octocat@github.com", "username": "octocat"},
    "added": [], "removed": [], "modified": ["deploy/frontend.yaml"]
  }],
  "head_commit": {"id": "0d1a26e67d8f5eaf1f6ba5c57fc3c7d91ac0fd1c", "message": "Update the frontend image"}
}`

const githubPing = `{"zen": "Keep it logically awesome.", "hook_id": 12345678, "hook": {"type": "Repository", "events": ["push"]}}`

func newGitRepository(g Gomega, ns, name string) *sourcev1.GitRepository {
	repo := &sourcev1.GitRepository{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec:       sourcev1.GitRepositorySpec{URL: "https://github.com/acme/" + name, Interval: metav1.Duration{Duration: time.Hour}},
	}
	g.Expect(env.Client.Create(context.Background(), repo)).To(Succeed())
	return repo
}

func newKustomization(g Gomega, ns, name string, labels map[string]string) *kustomizev1.Kustomization {
	ks := &kustomizev1.Kustomization{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels},
		Spec: kustomizev1.KustomizationSpec{
			Interval:  metav1.Duration{Duration: time.Hour},
			Prune:     true,
			SourceRef: kustomizev1.CrossNamespaceSourceReference{Kind: sourcev1.GitRepositoryKind, Name: "webapp"},
		},
	}
	g.Expect(env.Client.Create(context.Background(), ks)).To(Succeed())
	return ks
}

// TestGitHubPush: a signed push annotates the named GitRepository and the
// Kustomizations its labels select, and nothing else; a bad signature and
// a ping annotate nothing. windlass_receiver_requests_total counts the
// push accepted and the others refused, until the Receiver is deleted.
func TestGitHubPush(t *testing.T) {
	g := NewWithT(t)
	ns := env.CreateNamespace(t)
	const token = "gh-token-3f9a1c"
	createTokenSecret(g, ns, "token", token)
	webapp := newGitRepository(g, ns, "webapp")
	other := newGitRepository(g, ns, "other")
	web1 := newKustomization(g, ns, "frontend", map[string]string{"team": "web"})
	web2 := newKustomization(g, ns, "backend", map[string]string{"team": "web"})
	db := newKustomization(g, ns, "database", map[string]string{"team": "db"})
	rcv := createReceiver(g, ns, "github", notificationv1.ReceiverTypeGitHub,
		func(r *notificationv1.Receiver) { r.Spec.Events = []string{"push"} },
		notificationv1.ResourceReference{Kind: sourcev1.GitRepositoryKind, Name: "webapp"},
		notificationv1.ResourceReference{APIVersion: kustomizev1.GroupVersion.String(), Kind: kustomizev1.KustomizationKind,
			Name: "*", MatchLabels: map[string]string{"team": "web"}})

	ready := waitReady(g, rcv)
	path := expectedPath(token, rcv.Name, ns)
	g.Expect(ready.Status.WebhookPath).To(Equal(path))
	g.Expect(conditions.Message(ready, meta.ReadyCondition)).To(Equal("Receiver initialized for path: " + path))
	specBefore := webapp.Spec.DeepCopy()
	all := []client.Object{webapp, other, web1, web2, db}
	expectAnnotated := func(want ...client.Object) {
		for _, o := range all {
			_, has := annotations(g, o)[meta.ReconcileRequestAnnotation]
			g.Expect(has).To(Equal(containsObject(want, o)), "%s annotated", o.GetName())
		}
	}

	body := []byte(githubPush)
	headers := func(event, signature string) map[string]string {
		return map[string]string{"Content-Type": "application/json", "X-GitHub-Event": event,
			"X-GitHub-Delivery": "72d3162e-cc78-11e3-81ab-4c9367dc0958", "X-Hub-Signature-256": signature}
	}
	code, answer := postWebhook(g, path, headers("push", "sha256="+hmacSHA256("wrong-token", body)), body)
	g.Expect(code).To(Equal(http.StatusUnauthorized))
	g.Expect(answer).NotTo(ContainSubstring(token))
	expectAnnotated()
	g.Eventually(receiverRequests(ns), timeout, interval).Should(Equal(map[string]float64{"github/refused": 1}))

	ping := []byte(githubPing)
	code, _ = postWebhook(g, path, headers("ping", "sha256="+hmacSHA256(token, ping)), ping)
	g.Expect(code).To(Equal(http.StatusOK))
	expectAnnotated()

	code, answer = postWebhook(g, path, headers("push", "sha256="+hmacSHA256(token, body)), body)
	g.Expect(code).To(Equal(http.StatusOK), answer)
	g.Expect(answer).To(ContainSubstring("requested 3 objects"))
	expectAnnotated(webapp, web1, web2)
	stamp, err := time.Parse(time.RFC3339Nano, annotations(g, webapp)[meta.ReconcileRequestAnnotation])
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(stamp).To(BeTemporally("~", time.Now(), time.Minute))
	g.Expect(webapp.Spec).To(Equal(*specBefore), "the spec is untouched")
	g.Expect(webapp.Generation).To(Equal(int64(1)))
	g.Eventually(receiverRequests(ns), timeout, interval).Should(Equal(map[string]float64{
		"github/refused": 2, "github/accepted": 1}), "the ping asked for nothing: refused")

	g.Eventually(func(g Gomega) []string {
		return testutil.EventMessages(g, env.Client, rcv, notificationv1.ReceiverKind)
	}, timeout, interval).Should(ContainElements(
		WebhookHandledReason+": handled 'push' event: requested 3 objects",
		HavePrefix(WebhookRefusedReason+": refused a webhook request: unauthorized"),
		WebhookSkippedReason+": handled 'ping' event: nothing to do (GitHub ping)",
	))
	g.Expect(testutil.EventMessages(g, env.Client, rcv, notificationv1.ReceiverKind)).NotTo(ContainElement(ContainSubstring(token)))

	g.Expect(env.Client.Delete(context.Background(), rcv)).To(Succeed())
	g.Eventually(receiverRequests(ns), timeout, interval).Should(BeEmpty(), "the deleted Receiver's series are dropped")
}

func containsObject(list []client.Object, o client.Object) bool {
	for _, x := range list {
		if x == o {
			return true
		}
	}
	return false
}

// TestResourceFilter: spec.resourceFilter keeps the objects whose name is
// the payload's repository name.
func TestResourceFilter(t *testing.T) {
	g := NewWithT(t)
	ns := env.CreateNamespace(t)
	createTokenSecret(g, ns, "token", "generic-token-77")
	frontend := newGitRepository(g, ns, "frontend")
	backend := newGitRepository(g, ns, "backend")
	rcv := createReceiver(g, ns, "filtered", notificationv1.ReceiverTypeGeneric,
		func(r *notificationv1.Receiver) { r.Spec.ResourceFilter = `res.metadata.name == req.repository.name` },
		notificationv1.ResourceReference{Kind: sourcev1.GitRepositoryKind, Name: "*"})
	path := waitReady(g, rcv).Status.WebhookPath

	code, answer := postWebhook(g, path, map[string]string{"Content-Type": "application/json"}, []byte(`{"repository": {"name": "backend"}}`))
	g.Expect(code).To(Equal(http.StatusOK), answer)
	g.Expect(answer).To(ContainSubstring("requested 1 object"))
	g.Expect(annotations(g, backend)).To(HaveKey(meta.ReconcileRequestAnnotation))
	g.Expect(annotations(g, frontend)).NotTo(HaveKey(meta.ReconcileRequestAnnotation))
}

// TestGateClose: a generic Receiver whose resource is a Gate with action
// close sets the gate's close request, as `windlass gate close` does.
func TestGateClose(t *testing.T) {
	g := NewWithT(t)
	ns := env.CreateNamespace(t)
	createTokenSecret(g, ns, "token", "gate-token-19")
	gate := &gatingv1alpha1.Gate{ObjectMeta: metav1.ObjectMeta{Name: "prod-freeze", Namespace: ns}}
	g.Expect(env.Client.Create(context.Background(), gate)).To(Succeed())
	rcv := createReceiver(g, ns, "freeze", notificationv1.ReceiverTypeGeneric, nil,
		notificationv1.ResourceReference{Kind: notificationv1.GateKind, Name: "prod-freeze", Action: notificationv1.GateActionClose})
	path := waitReady(g, rcv).Status.WebhookPath

	before := time.Now().UTC().Truncate(time.Second)
	code, answer := postWebhook(g, path, nil, nil)
	g.Expect(code).To(Equal(http.StatusOK), answer)
	got := annotations(g, gate)
	g.Expect(got).NotTo(HaveKey(gatingv1alpha1.OpenRequestAnnotation))
	g.Expect(got).To(HaveKey(meta.ReconcileRequestAnnotation))
	at, err := time.Parse(time.RFC3339, got[gatingv1alpha1.CloseRequestAnnotation])
	g.Expect(err).NotTo(HaveOccurred(), "close request %q", got[gatingv1alpha1.CloseRequestAnnotation])
	g.Expect(got[gatingv1alpha1.CloseRequestAnnotation]).To(HaveSuffix("Z"), "UTC to the second, as the CLI writes it")
	g.Expect(at).To(BeTemporally(">=", before))
	g.Expect(at).To(BeTemporally("<=", time.Now()))
}

// TestReceiverMissingSecret: a Receiver without its Secret is not Ready, says which
// Secret, and serves nothing; the Secret makes it Ready. The token appears
// in no condition, event or log.
func TestReceiverMissingSecret(t *testing.T) {
	g := NewWithT(t)
	ns := env.CreateNamespace(t)
	rcv := createReceiver(g, ns, "waiting", notificationv1.ReceiverTypeGitLab, nil,
		notificationv1.ResourceReference{Kind: sourcev1.GitRepositoryKind, Name: "webapp"})
	latest := &notificationv1.Receiver{}
	g.Eventually(func(g Gomega) {
		g.Expect(env.Client.Get(context.Background(), client.ObjectKeyFromObject(rcv), latest)).To(Succeed())
		g.Expect(conditions.IsFalse(latest, meta.ReadyCondition)).To(BeTrue())
	}, timeout, interval).Should(Succeed())
	g.Expect(conditions.Reason(latest, meta.ReadyCondition)).To(Equal(TokenNotFoundReason))
	g.Expect(conditions.Message(latest, meta.ReadyCondition)).To(ContainSubstring("secret '" + ns + "/token' not found"))
	g.Expect(latest.Status.WebhookPath).To(BeEmpty())

	const token = "s3cr3t-gitlab-token-5150"
	createTokenSecret(g, ns, "token", token)
	ready := waitReady(g, rcv)
	g.Expect(ready.Status.WebhookPath).To(Equal(expectedPath(token, rcv.Name, ns)))

	status, err := json.Marshal(ready.Status)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(status)).NotTo(ContainSubstring(token))
	g.Expect(testutil.EventMessages(g, env.Client, rcv, notificationv1.ReceiverKind)).NotTo(ContainElement(ContainSubstring(token)))

	// A new token revokes the old path at once, and publishes its own.
	rotated := &corev1.Secret{}
	g.Expect(env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "token"}, rotated)).To(Succeed())
	rotated.Data[notificationv1.TokenKey] = []byte("rotated-" + token)
	g.Expect(env.Client.Update(context.Background(), rotated)).To(Succeed())
	code, _ := postWebhook(g, ready.Status.WebhookPath, map[string]string{"X-Gitlab-Token": token, "X-Gitlab-Event": "Push Hook"}, []byte(`{}`))
	g.Expect(code).To(Equal(http.StatusNotFound))
	g.Eventually(func(g Gomega) string {
		g.Expect(env.Client.Get(context.Background(), client.ObjectKeyFromObject(rcv), latest)).To(Succeed())
		return latest.Status.WebhookPath
	}, timeout, interval).Should(Equal(expectedPath("rotated-"+token, rcv.Name, ns)))
	g.Expect(logs.Contains(ns)).To(BeTrue(), "the logs mention the Receiver, so their search is not vacuous")
	g.Expect(logs.Contains(token)).To(BeFalse())
}

// TestRefusedRequests: a body over 1 MiB is refused with 413 before any
// object is annotated; an unknown path is 404, another method 405, a
// suspended Receiver 503. Each is counted refused, for the Receiver when
// the path is its, else for none.
func TestRefusedRequests(t *testing.T) {
	g := NewWithT(t)
	ns := env.CreateNamespace(t)
	createTokenSecret(g, ns, "token", "big-body-token")
	repo := newGitRepository(g, ns, "webapp")
	rcv := createReceiver(g, ns, "generic", notificationv1.ReceiverTypeGeneric, nil,
		notificationv1.ResourceReference{Kind: sourcev1.GitRepositoryKind, Name: "webapp"})
	path := waitReady(g, rcv).Status.WebhookPath
	huge := bytes.Repeat([]byte("x"), 2<<20)

	for _, chunked := range []bool{false, true} {
		req, err := http.NewRequest(http.MethodPost, serverURL+path, bytes.NewReader(huge))
		g.Expect(err).NotTo(HaveOccurred())
		if chunked {
			req.ContentLength = -1 // sent chunked: the server finds the size by reading
		}
		code, answer := do(g, req)
		g.Expect(code).To(Equal(http.StatusRequestEntityTooLarge), "chunked %v", chunked)
		g.Expect(answer).To(Equal("request body too large\n"))
		g.Expect(annotations(g, repo)).NotTo(HaveKey(meta.ReconcileRequestAnnotation))
	}
	g.Eventually(receiverRequests(ns), timeout, interval).Should(Equal(map[string]float64{"generic/refused": 2}))

	// The requests to no Receiver count for none: other tests' too, so
	// only the increase is this test's.
	toNone := func() float64 {
		return testutil.SeriesOf(metrics.ReceiverRequests, map[string]string{"exported_namespace": "", "name": ""}, "result")[metrics.RequestRefused]
	}
	before := toNone()
	unknown := "/hook/" + strings.Repeat("0", 64)
	for _, p := range []string{unknown, "/hook/abc", "/", path + "/x"} {
		code, _ := postWebhook(g, p, nil, nil)
		g.Expect(code).To(Equal(http.StatusNotFound), p)
	}
	req, err := http.NewRequest(http.MethodGet, serverURL+path, nil)
	g.Expect(err).NotTo(HaveOccurred())
	code, _ := do(g, req)
	g.Expect(code).To(Equal(http.StatusMethodNotAllowed))
	g.Eventually(toNone, timeout, interval).Should(BeNumerically(">=", before+5))

	suspend := client.RawPatch(types.MergePatchType, []byte(`{"spec":{"suspend":true}}`))
	g.Expect(env.Client.Patch(context.Background(), rcv, suspend)).To(Succeed())
	g.Eventually(func(g Gomega) int {
		code, _ := postWebhook(g, path, nil, nil)
		return code
	}, timeout, interval).Should(Equal(http.StatusServiceUnavailable))
	// Until the suspension reached the cache, requests were served.
	last := annotations(g, repo)[meta.ReconcileRequestAnnotation]
	g.Eventually(func() float64 { return receiverRequests(ns)()["generic/refused"] }, timeout, interval).
		Should(BeNumerically(">=", 3), "the first 503 is counted")
	refused := receiverRequests(ns)()["generic/refused"]
	code, _ = postWebhook(g, path, nil, nil)
	g.Expect(code).To(Equal(http.StatusServiceUnavailable))
	g.Expect(annotations(g, repo)[meta.ReconcileRequestAnnotation]).To(Equal(last), "a suspended Receiver annotates nothing")
	g.Eventually(func() float64 { return receiverRequests(ns)()["generic/refused"] }, timeout, interval).
		Should(Equal(refused+1), "a request to a suspended Receiver is refused, for it")
}

// TestCheckSpec: the specs no retry can fix stall the Receiver, each with
// its reason.
func TestCheckSpec(t *testing.T) {
	valid := func() *notificationv1.Receiver {
		return &notificationv1.Receiver{
			ObjectMeta: metav1.ObjectMeta{Name: "r", Namespace: "apps"},
			Spec: notificationv1.ReceiverSpec{Type: notificationv1.ReceiverTypeGitHub, Resources: []notificationv1.ResourceReference{
				{Kind: sourcev1.GitRepositoryKind, Name: "webapp", Namespace: "infra"},
			}},
		}
	}
	tests := []struct {
		name    string
		change  func(*notificationv1.Receiver)
		noCross bool
		reason  string
	}{
		{name: "valid", change: func(*notificationv1.Receiver) {}},
		{name: "unserved type", change: func(r *notificationv1.Receiver) { r.Spec.Type = notificationv1.ReceiverTypeGCR }, reason: UnsupportedTypeReason},
		{name: "cross-namespace refused", change: func(*notificationv1.Receiver) {}, noCross: true, reason: meta.AccessDeniedReason},
		{name: "bad CEL", change: func(r *notificationv1.Receiver) { r.Spec.ResourceFilter = "res.metadata.name ==" }, reason: meta.InvalidCELExpressionReason},
		{name: "bad apiVersion", change: func(r *notificationv1.Receiver) { r.Spec.Resources[0].APIVersion = "a/b/c" }, reason: InvalidResourceReason},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			r := valid()
			tt.change(r)
			err := CheckSpec(r, tt.noCross)
			if tt.reason == "" {
				g.Expect(err).NotTo(HaveOccurred())
				return
			}
			var stalling *outcome.Stalling
			g.Expect(err).To(BeAssignableToTypeOf(stalling))
			g.Expect(outcome.ReasonOf(err, "")).To(Equal(tt.reason))
		})
	}
}
