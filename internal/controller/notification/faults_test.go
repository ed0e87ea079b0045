package notification

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	eventv1 "github.com/windlass-dev/windlass/api/event/v1beta1"
	kustomizev1 "github.com/windlass-dev/windlass/api/kustomize/v1"
	"github.com/windlass-dev/windlass/api/meta"
	notificationv1beta3 "github.com/windlass-dev/windlass/api/notification/v1beta3"
	"github.com/windlass-dev/windlass/internal/event"
	"github.com/windlass-dev/windlass/internal/notify/dispatch"
	"github.com/windlass-dev/windlass/internal/notify/forward"
)

// countingTransport counts the requests made to the API server.
type countingTransport struct {
	next http.RoundTripper
	n    *atomic.Int64
}

// RoundTrip implements http.RoundTripper.
func (t countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	t.n.Add(1)
	return t.next.RoundTrip(r)
}

// The event path adds no API request per event: an Alert's rule is built
// from the control plane by a reconciler whose every request is counted;
// then 1000 Kustomizations, which the API server has never heard of, fail
// and recover, their events recorded as the controllers record them, and
// the provider gets what their labels select, folded and resolved, while
// the count of requests stays where it was.
func TestEventPathMakesNoAPIRequest(t *testing.T) {
	g := NewWithT(t)
	ns := env.CreateNamespace(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	a := newHook(t)
	createSecret(g, ns, "hook-token", map[string]string{KeyToken: "t0ken-count"})
	createProvider(g, ns, "web-chat", a.URL, []*hook{a}, func(p *notificationv1beta3.Provider) {
		p.Spec.SecretRef = &meta.LocalObjectReference{Name: "hook-token"}
	})
	alert := createAlert(g, ns, "web", "web-chat", "info", []notificationv1beta3.EventSource{{Kind: kustomizev1.KustomizationKind,
		Name: "*", MatchLabels: map[string]string{"team": "web"}}})

	var requests atomic.Int64
	cfg := rest.CopyConfig(env.Config)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return countingTransport{next: rt, n: &requests} })
	c, err := client.New(cfg, client.Options{Scheme: env.Scheme})
	g.Expect(err).NotTo(HaveOccurred())
	d := dispatch.New(dispatch.Options{QueueSize: 10000, Log: ctrl.Log.WithName("counted-dispatcher")})
	go func() { _ = d.Run(ctx) }()
	r := &AlertReconciler{Client: c, SecretReader: c, Dispatcher: d, AllowLoopback: true}
	_, err = r.Reconcile(ctx, ctrl.Request{NamespacedName: types.NamespacedName{Namespace: ns, Name: alert.Name}})
	g.Expect(err).NotTo(HaveOccurred())
	_, ok := r.ruleOf(keyOf(alert).String())
	g.Expect(ok).To(BeTrue())
	before := requests.Load()
	g.Expect(before).To(BeNumerically(">=", 3), "the Alert, its Provider and their Secrets were read through the counted transport")

	recorder := &event.Recorder{Sink: &forward.Sink{Dispatcher: d, Scheme: env.Scheme, Controller: "kustomize-controller"}}
	const objects = 1000
	for _, recovered := range []bool{false, true} {
		for i := range objects {
			ks := kustomization(ns, fmt.Sprintf("app-%04d", i), recovered)
			ks.Labels = map[string]string{"team": []string{"web", "db"}[i%2]}
			if recovered {
				recorder.Normal(ctx, ks, meta.ReconciliationSucceededReason, "main@sha1:6666666666666666666666666666666666666666",
					"Applied revision: main@sha1:6666666666666666666666666666666666666666")
			} else {
				recorder.Warning(ctx, ks, "ArtifactFailed", "", "source 'GitRepository/"+ns+"/apps' not found")
			}
		}
	}
	// The first failure, then the recoveries of the 500 web apps, the
	// first resolving that failure; the others' failures were folded and
	// are over.
	g.Eventually(func() int { return len(a.received()) }, 20*time.Second).Should(Equal(1 + objects/2))
	g.Consistently(func() int { return len(a.received()) }, quiet).Should(Equal(1 + objects/2))
	got := a.received()
	g.Expect(got[0].Message).To(Equal("source 'GitRepository/" + ns + "/apps' not found"))
	g.Expect(got[1].Message).To(HavePrefix("Resolved: Applied revision"))
	for _, p := range got {
		var i int
		_, err := fmt.Sscanf(p.InvolvedObject.Name, "app-%04d", &i)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(i%2).To(BeZero(), "only the web apps are selected, by the labels of the objects in memory")
	}
	g.Expect(requests.Load()).To(Equal(before), "no API request was made for %d events", 2*objects)
}

// A delivery that fails is logged, by Alert and object, and neither the
// log nor the Alert's events quote the Provider's token or headers, even
// when the service echoes them back.
func TestDeliveryFailureHidesSecrets(t *testing.T) {
	g := NewWithT(t)
	ns := env.CreateNamespace(t)
	const (
		token  = "tok-echoed-51ac"
		header = "hdr-echoed-93d0"
	)
	echo := &hook{Server: httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = fmt.Fprintf(w, "bad credentials: %s / %s", r.Header.Get("Authorization"), r.Header.Get("X-Api-Key"))
	}))}
	t.Cleanup(echo.Close)
	createSecret(g, ns, "echo-creds", map[string]string{KeyToken: token, KeyHeaders: "X-Api-Key: " + header})
	createProvider(g, ns, "echo", echo.URL, []*hook{echo}, func(p *notificationv1beta3.Provider) {
		p.Spec.SecretRef = &meta.LocalObjectReference{Name: "echo-creds"}
	})
	alert := createAlert(g, ns, "ops", "echo", "info", []notificationv1beta3.EventSource{kustomizations})
	waitRule(g, alert)
	applied(ns, "refused", "main@sha1:7777777777777777777777777777777777777777")

	failure := "kustomization/refused." + ns
	g.Eventually(func() bool { return logs.Contains(failure) }, 10*time.Second).Should(BeTrue(), "the failure is logged with its object")
	var line string
	for _, l := range strings.Split(logs.String(), "\n") {
		if strings.Contains(l, failure) {
			line = l
		}
	}
	g.Expect(line).To(ContainSubstring("Giving up sending a notification"))
	g.Expect(line).To(ContainSubstring("401"), "the log says why")
	g.Expect(line).To(ContainSubstring(keyOf(alert).String()))
	all := logs.String() + strings.Join(alertEvents(g, alert), "\n")
	g.Expect(all).NotTo(ContainSubstring(token))
	g.Expect(all).NotTo(ContainSubstring(header))
}

// A provider that hangs holds up neither the reconcilers that record
// events nor the other providers: the events of 50 failures are all
// recorded while it hangs, and another Alert's provider gets its messages
// (each provider's queue holds dispatch.DefaultQueueSize messages).
func TestHungProviderBlocksNothing(t *testing.T) {
	g := NewWithT(t)
	ns := env.CreateNamespace(t)
	release := make(chan struct{})
	var mu sync.Mutex
	var stuckOn []string
	stuck := &hook{Server: httptest.NewTLSServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		var e eventv1.Event
		_ = json.NewDecoder(r.Body).Decode(&e)
		mu.Lock()
		stuckOn = append(stuckOn, e.InvolvedObject.Name)
		mu.Unlock()
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))}
	stuckObjects := func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), stuckOn...)
	}
	t.Cleanup(stuck.Close)
	t.Cleanup(func() { close(release) }) // before Close, which waits for the handlers
	healthy := newHook(t)
	createProvider(g, ns, "stuck", stuck.URL, []*hook{stuck})
	createProvider(g, ns, "healthy", healthy.URL, []*hook{healthy})
	waitRule(g, createAlert(g, ns, "stuck", "stuck", "info", []notificationv1beta3.EventSource{kustomizations}))
	waitRule(g, createAlert(g, ns, "healthy", "healthy", "info", []notificationv1beta3.EventSource{kustomizations}))

	applied(ns, "first", "main@sha1:8888888888888888888888888888888888888888")
	g.Eventually(stuckObjects, 5*time.Second).ShouldNot(BeEmpty(), "the stuck provider holds the first message")
	// Had recording an event waited for the stuck provider, this loop
	// would not end before the test's deadline.
	for i := range 50 {
		failed(ns, fmt.Sprintf("app-%03d", i), "BuildFailed", fmt.Sprintf("kustomize build failed: error %d", i))
	}
	g.Eventually(func() int { return len(healthy.received()) }, 10*time.Second).Should(Equal(51))
	g.Expect(stuckObjects()).To(HaveEach("first"), "the stuck provider is still on its first message (posted again when a post times out)")
}
