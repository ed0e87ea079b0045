package notification

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	gatingv1alpha1 "github.com/windlass-dev/windlass/api/gating/v1alpha1"
	"github.com/windlass-dev/windlass/api/meta"
	notificationv1 "github.com/windlass-dev/windlass/api/notification/v1"
	"github.com/windlass-dev/windlass/internal/conditions"
	"github.com/windlass-dev/windlass/internal/scheme"
	"github.com/windlass-dev/windlass/internal/testutil"
	"github.com/windlass-dev/windlass/internal/webhook"
)

// longAgo marks a Gate's open request as one no webhook wrote, so that a
// test sees whether a later request wrote another.
const longAgo = "2000-01-01T00:00:00Z"

// timedHeaders signs body at `at` with token, as a generic-hmac sender
// following docs/kinds/receiver.md does.
func timedHeaders(token string, at time.Time, body []byte) map[string]string {
	ts := strconv.FormatInt(at.Unix(), 10)
	return map[string]string{"Content-Type": "application/json", webhook.TimestampHeader: ts,
		"X-Signature": "sha256=" + hmacSHA256(token, append([]byte(ts+"."), body...))}
}

// createGate creates a Gate in ns whose open request is longAgo.
func createGate(g Gomega, ns, name string, allowed ...meta.NamespacedObjectReference) *gatingv1alpha1.Gate {
	gate := &gatingv1alpha1.Gate{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns,
			Annotations: map[string]string{gatingv1alpha1.OpenRequestAnnotation: longAgo}},
		Spec: gatingv1alpha1.GateSpec{AllowedReceivers: allowed},
	}
	g.Expect(env.Client.Create(context.Background(), gate)).To(Succeed())
	return gate
}

// security-2 risk 2, as the review wrote it: a Receiver in a tenant's
// namespace naming another namespace's approval Gate does not open it,
// and says why in an event; once the Gate lists that Receiver in
// spec.allowedReceivers, the same kind of request opens it.
func TestReceiverOpensAnotherNamespacesGateOnlyWhenTheGateListsIt(t *testing.T) {
	g := NewWithT(t)
	tenant, prod := env.CreateNamespace(t), env.CreateNamespace(t)
	const token = "tenant-opener-91"
	createTokenSecret(g, tenant, "token", token)
	gate := createGate(g, prod, "prod-approval")
	rcv := createReceiver(g, tenant, "opener", notificationv1.ReceiverTypeGenericHMAC, nil,
		notificationv1.ResourceReference{APIVersion: gatingv1alpha1.GroupVersion.String(), Kind: gatingv1alpha1.GateKind,
			Name: "prod-approval", Namespace: prod})
	path := waitReady(g, rcv).Status.WebhookPath

	body := []byte(`{"approved_by":"tenant"}`)
	code, answer := postWebhook(g, path, timedHeaders(token, time.Now(), body), body)
	g.Expect(code).To(Equal(http.StatusInternalServerError), answer)
	g.Expect(annotations(g, gate)).To(HaveKeyWithValue(gatingv1alpha1.OpenRequestAnnotation, longAgo), "the Gate stays as it was")
	g.Expect(annotations(g, gate)).NotTo(HaveKey(meta.ReconcileRequestAnnotation))
	g.Eventually(func(g Gomega) {
		g.Expect(testutil.EventMessages(g, env.Client, rcv, notificationv1.ReceiverKind)).To(ContainElement(
			ContainSubstring("Gate '" + prod + "/prod-approval' does not list Receiver '" + tenant + "/opener' in spec.allowedReceivers")))
	}, timeout, interval).Should(Succeed())

	latest := &gatingv1alpha1.Gate{}
	g.Expect(env.Client.Get(context.Background(), client.ObjectKeyFromObject(gate), latest)).To(Succeed())
	latest.Spec.AllowedReceivers = []meta.NamespacedObjectReference{{Namespace: tenant, Name: "opener"}}
	g.Expect(env.Client.Update(context.Background(), latest)).To(Succeed())
	g.Eventually(func(g Gomega) {
		code, answer := postWebhook(g, path, timedHeaders(token, time.Now(), body), body)
		g.Expect(code).To(Equal(http.StatusOK), answer)
	}, timeout, interval).Should(Succeed(), "once the cache sees the Gate's new spec")
	g.Expect(annotations(g, gate)).NotTo(HaveKeyWithValue(gatingv1alpha1.OpenRequestAnnotation, longAgo))
}

// security-2 risk 2, the replay: a signed request with its time opens the
// Gate once; sent again, or signed without a time, or signed too long ago,
// it is refused and the Gate keeps its request.
func TestReceiverRefusesAReplayedGateOpening(t *testing.T) {
	g := NewWithT(t)
	ns := env.CreateNamespace(t)
	const token = "approver-token-7c2"
	createTokenSecret(g, ns, "token", token)
	gate := createGate(g, ns, "prod-approval")
	rcv := createReceiver(g, ns, "approve", notificationv1.ReceiverTypeGenericHMAC, nil,
		notificationv1.ResourceReference{Kind: gatingv1alpha1.GateKind, Name: "prod-approval"})
	path := waitReady(g, rcv).Status.WebhookPath

	body := []byte(`{"approved_by":"sre"}`)
	captured := timedHeaders(token, time.Now(), body)
	code, answer := postWebhook(g, path, captured, body)
	g.Expect(code).To(Equal(http.StatusOK), answer)
	g.Expect(annotations(g, gate)).NotTo(HaveKeyWithValue(gatingv1alpha1.OpenRequestAnnotation, longAgo), "the first request opens")

	resetOpenRequest := func() {
		latest := &gatingv1alpha1.Gate{}
		g.Expect(env.Client.Get(context.Background(), client.ObjectKeyFromObject(gate), latest)).To(Succeed())
		latest.Annotations[gatingv1alpha1.OpenRequestAnnotation] = longAgo
		g.Expect(env.Client.Update(context.Background(), latest)).To(Succeed())
	}
	resetOpenRequest()

	code, answer = postWebhook(g, path, captured, body)
	g.Expect(code).To(Equal(http.StatusUnauthorized), answer)

	untimed := map[string]string{"Content-Type": "application/json", "X-Signature": "sha256=" + hmacSHA256(token, body)}
	code, answer = postWebhook(g, path, untimed, body)
	g.Expect(code).To(Equal(http.StatusInternalServerError), answer)

	code, answer = postWebhook(g, path, timedHeaders(token, time.Now().Add(-time.Hour), body), body)
	g.Expect(code).To(Equal(http.StatusUnauthorized), answer) // its event folds into the replay's: one reason

	g.Expect(annotations(g, gate)).To(HaveKeyWithValue(gatingv1alpha1.OpenRequestAnnotation, longAgo), "no refused request opened the Gate")
	g.Eventually(func(g Gomega) {
		messages := testutil.EventMessages(g, env.Client, rcv, notificationv1.ReceiverKind)
		g.Expect(messages).To(ContainElement(ContainSubstring("a timed request is taken once")))
		g.Expect(messages).To(ContainElement(ContainSubstring("opens only on a request signed with a time")))
	}, timeout, interval).Should(Succeed())
}

// A Receiver whose requests carry no signed time cannot open a Gate: it is
// Stalled, naming the type that can, and serves no path; closing a Gate,
// which only holds changes back, is left to every type (TestGateClose).
func TestReceiverOfAnUnsignedTypeCannotOpenAGate(t *testing.T) {
	g := NewWithT(t)
	ns := env.CreateNamespace(t)
	createTokenSecret(g, ns, "token", "generic-token-3")
	rcv := createReceiver(g, ns, "opener", notificationv1.ReceiverTypeGeneric, nil,
		notificationv1.ResourceReference{Kind: gatingv1alpha1.GateKind, Name: "prod-approval"})
	latest := waitStalled(g, rcv)
	g.Expect(conditions.Reason(latest, meta.StalledCondition)).To(Equal(InvalidResourceReason))
	g.Expect(conditions.Message(latest, meta.StalledCondition)).To(ContainSubstring("opened only by a Receiver of type 'generic-hmac'"))
	g.Expect(latest.Status.WebhookPath).To(BeEmpty())
}

// security-2 runner-up, concurrent requests: with as many requests under
// way as the Server serves at once, the next is answered 429 with a
// Retry-After before anything of it is read; one place freed, requests
// are served again.
func TestWebhookServerBoundsTheRequestsServedAtOnce(t *testing.T) {
	g := NewWithT(t)
	c := fake.NewClientBuilder().WithScheme(scheme.New()).WithIndex(&notificationv1.Receiver{}, WebhookPathIndexKey,
		func(client.Object) []string { return nil }).Build()
	s := &WebhookServer{Client: c}
	for range maxInFlight {
		g.Expect(s.acquire()).To(BeTrue())
	}
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/hook/"+strings.Repeat("a", digestLength), strings.NewReader("{}")))
	g.Expect(rec.Code).To(Equal(http.StatusTooManyRequests))
	g.Expect(rec.Header().Get("Retry-After")).To(Equal("1"))

	s.release()
	rec = httptest.NewRecorder()
	s.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/hook/"+strings.Repeat("a", digestLength), strings.NewReader("{}")))
	g.Expect(rec.Code).To(Equal(http.StatusNotFound), "served: no Receiver has that path")
}
