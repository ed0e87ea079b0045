package notification

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	eventv1 "github.com/windlass-dev/windlass/api/event/v1beta1"
	kustomizev1 "github.com/windlass-dev/windlass/api/kustomize/v1"
	"github.com/windlass-dev/windlass/api/meta"
	notificationv1beta3 "github.com/windlass-dev/windlass/api/notification/v1beta3"
	"github.com/windlass-dev/windlass/internal/event"
	"github.com/windlass-dev/windlass/internal/notify/dispatch"
	"github.com/windlass-dev/windlass/internal/notify/forward"
	"github.com/windlass-dev/windlass/internal/testutil"
	"github.com/windlass-dev/windlass/internal/testutil/testenv"
)

// window is the dispatcher's deduplication and folding window in tests.
const window = 2 * time.Second

var (
	// env is the test control plane, with the notification controller of
	// the real manager running against it (main_test.go).
	env  *testenv.Environment
	logs *testutil.Logs
	// dispatcher is the manager's dispatcher of events.
	dispatcher *dispatch.Dispatcher
	// sink hands events to the dispatcher as the controllers do.
	sink *forward.Sink
	// clock is the dispatcher's clock.
	clock = &testClock{}
)

// testClock is the time, unless a test freezes it to move it by hand: the
// dispatcher's windows then end when the test says, however long its
// steps take.
type testClock struct {
	mu     sync.Mutex
	frozen bool
	at     time.Time
	offset time.Duration
}

// Now returns the clock's time.
func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.frozen {
		return c.at
	}
	return time.Now().Add(c.offset)
}

// Freeze stops the clock until Thaw.
func (c *testClock) Freeze() {
	now := c.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.frozen, c.at = true, now
}

// Advance moves the frozen clock by d.
func (c *testClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.at = c.at.Add(d)
}

// Thaw lets the clock run again from where it stands.
func (c *testClock) Thaw() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.offset, c.frozen = time.Until(c.at), false
}

// hook is a loopback HTTPS webhook that records what generic providers
// post to it.
type hook struct {
	*httptest.Server
	mu    sync.Mutex
	posts []post
}

// post is one request a hook received.
type post struct {
	eventv1.Event
	Header http.Header
	Path   string
	Body   []byte
}

func newHook(t *testing.T) *hook {
	h := &hook{}
	h.Server = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var e eventv1.Event
		body, _ := io.ReadAll(r.Body)
		if err := json.Unmarshal(body, &e); err != nil {
			http.Error(w, "not JSON", http.StatusBadRequest)
			return
		}
		h.mu.Lock()
		defer h.mu.Unlock()
		h.posts = append(h.posts, post{Event: e, Header: r.Header.Clone(), Path: r.URL.Path, Body: body})
	}))
	t.Cleanup(h.Close)
	return h
}

// received returns the posts so far.
func (h *hook) received() []post {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]post(nil), h.posts...)
}

// messages returns "severity: message" of each post.
func (h *hook) messages() []string {
	var out []string
	for _, p := range h.received() {
		out = append(out, p.Severity+": "+p.Message)
	}
	return out
}

// caPEM is the hook's certificate, to trust it.
func (h *hook) caPEM() string {
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: h.Certificate().Raw}))
}

func createSecret(g Gomega, ns, name string, data map[string]string) *corev1.Secret {
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, StringData: data}
	g.Expect(env.Client.Create(context.Background(), s)).To(Succeed())
	return s
}

// createProvider creates a generic Provider at address that trusts the
// hooks (their CAs in its certSecretRef Secret), changed by mutate.
func createProvider(g Gomega, ns, name, address string, trusted []*hook, mutate ...func(*notificationv1beta3.Provider)) *notificationv1beta3.Provider {
	p := &notificationv1beta3.Provider{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       notificationv1beta3.ProviderSpec{Type: notificationv1beta3.ProviderTypeGeneric, Address: address},
	}
	if len(trusted) > 0 {
		ca := ""
		for _, h := range trusted {
			ca += h.caPEM()
		}
		createSecret(g, ns, name+"-ca", map[string]string{"ca.crt": ca})
		p.Spec.CertSecretRef = &meta.LocalObjectReference{Name: name + "-ca"}
	}
	for _, f := range mutate {
		f(p)
	}
	g.Expect(env.Client.Create(context.Background(), p)).To(Succeed())
	return p
}

// kustomizations is the event source of every Kustomization.
var kustomizations = notificationv1beta3.EventSource{Kind: kustomizev1.KustomizationKind, Name: "*"}

func createAlert(g Gomega, ns, name, provider, severity string, sources []notificationv1beta3.EventSource, mutate ...func(*notificationv1beta3.Alert)) *notificationv1beta3.Alert {
	a := &notificationv1beta3.Alert{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: notificationv1beta3.AlertSpec{ProviderRef: meta.LocalObjectReference{Name: provider},
			EventSeverity: severity, EventSources: sources},
	}
	for _, f := range mutate {
		f(a)
	}
	g.Expect(env.Client.Create(context.Background(), a)).To(Succeed())
	return a
}

// waitRule waits until the Alert has a rule, and returns its ProviderKey.
func waitRule(g Gomega, a *notificationv1beta3.Alert) string {
	var key string
	g.Eventually(func() bool {
		var ok bool
		key, ok = dispatcher.ProviderOf(keyOf(a).String())
		return ok
	}, 10*time.Second, 20*time.Millisecond).Should(BeTrue(), "the Alert %s has no rule", a.Name)
	return key
}

// waitNoRule waits until the Alert has no rule.
func waitNoRule(g Gomega, a *notificationv1beta3.Alert) {
	g.Eventually(func() bool {
		_, ok := dispatcher.ProviderOf(keyOf(a).String())
		return ok
	}, 10*time.Second, 20*time.Millisecond).Should(BeFalse(), "the Alert %s still has a rule", a.Name)
}

// kustomization is a Kustomization as the controller holds it when it
// records an event.
func kustomization(ns, name string, ready bool) *kustomizev1.Kustomization {
	k := &kustomizev1.Kustomization{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	status := metav1.ConditionFalse
	if ready {
		status = metav1.ConditionTrue
	}
	k.Status.Conditions = []metav1.Condition{{Type: meta.ReadyCondition, Status: status, Reason: "Test"}}
	return k
}

// failed records a failure of the Kustomization, as its controller does,
// for revision if one is given.
func failed(ns, name, reason, message string, revision ...string) {
	e := event.Event{Type: event.TypeWarning, Reason: reason, Message: message}
	if len(revision) > 0 {
		e.Revision = revision[0]
	}
	sink.Forward(context.Background(), kustomization(ns, name, false), e)
}

// applied records a successful reconciliation of a Ready Kustomization.
func applied(ns, name, revision string) {
	sink.Forward(context.Background(), kustomization(ns, name, true), event.Event{Type: event.TypeNormal,
		Reason: meta.ReconciliationSucceededReason, Revision: revision, Message: "Applied revision: " + revision})
}

// alertEvents returns "reason: message" of the Kubernetes events about a.
func alertEvents(g Gomega, a *notificationv1beta3.Alert) []string {
	return testutil.EventMessages(g, env.Client, a, notificationv1beta3.AlertKind)
}
