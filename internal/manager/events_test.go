package manager

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"github.com/spf13/pflag"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	kustomizev1 "github.com/windlass-dev/windlass/api/kustomize/v1"
	"github.com/windlass-dev/windlass/internal/event"
	"github.com/windlass-dev/windlass/internal/kubeauth"
	"github.com/windlass-dev/windlass/internal/notify"
	"github.com/windlass-dev/windlass/internal/notify/dispatch"
	"github.com/windlass-dev/windlass/internal/notify/forward"
	"github.com/windlass-dev/windlass/internal/testutil"
	"github.com/windlass-dev/windlass/internal/testutil/childproc"
)

// received records the messages of a dispatcher rule.
type received struct {
	mu       sync.Mutex
	messages []string
}

func (r *received) Post(_ context.Context, m notify.Message) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.messages = append(r.messages, m.Message)
	return nil
}

func (r *received) all() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.messages...)
}

// testOptions are the binary's defaults for controllers in the runtime
// namespace ns, serving nothing but what a test sets.
func testOptions(ns string, controllers ...string) Options {
	o := DefaultOptions()
	BindControllerFlags(pflag.NewFlagSet("test", pflag.ContinueOnError), &o)
	o.Controllers, o.Namespace = controllers, ns
	o.MetricsAddr, o.HealthAddr = "0", "0"
	return o
}

// notificationEndpoint runs a notification controller, as the
// administrator, whose event endpoint admits the windlass service account
// of ns; it returns the endpoint's URL and what its dispatcher sends about
// ns's Kustomizations.
func notificationEndpoint(t *testing.T, g *WithT, ctx context.Context, ns string) (string, *received) {
	t.Helper()
	opts := testOptions(ns, NotificationController)
	addrs, err := childproc.FreeAddrs(2)
	g.Expect(err).NotTo(HaveOccurred())
	opts.Notification.ReceiverAddr, opts.Notification.EventsListenAddr = addrs[0], addrs[1]
	m, err := New(ctx, env.Config, opts)
	g.Expect(err).NotTo(HaveOccurred())
	go func() { _ = m.Start(ctx) }()
	box := &received{}
	g.Expect(m.Dispatcher().SetRule(dispatch.Rule{Key: ns + "/test", Namespace: ns, Severity: dispatch.SeverityInfo,
		Sources: []dispatch.Source{{Kind: kustomizev1.KustomizationKind, Name: "*"}}, Notifier: box, ProviderKey: ns + "/test"})).To(Succeed())
	return "http://" + addrs[1] + "/", box
}

// poster returns the event sink that a controller of a manager for cfg
// running controller (one a process, as their names are) gets, posting to
// url, and runs it until ctx ends.
func poster(g *WithT, ctx context.Context, cfg *rest.Config, controller, ns, url string) event.Sink {
	opts := testOptions(ns, controller)
	opts.EventsAddr = url
	m, err := New(ctx, cfg, opts)
	g.Expect(err).NotTo(HaveOccurred())
	sink := m.eventSink("kustomize-controller")
	p, ok := sink.(*forward.Poster)
	g.Expect(ok).To(BeTrue(), "a controller whose notification controller runs elsewhere posts its events")
	go func() { _ = p.Start(ctx) }()
	return sink
}

// TestSplitEventsAuthenticate: split, a controller whose kubeconfig holds
// the token of the allowed service account has its events admitted by
// the notification controller; one that authenticates as another service
// account, or with a client certificate (no token to send), has them
// refused, and the latter says so in its log.
func TestSplitEventsAuthenticate(t *testing.T) {
	g := NewWithT(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ns := env.CreateNamespace(t)
	logged := len(logs.String())
	since := func() string { return logs.String()[logged:] } // what this test logs
	url, box := notificationEndpoint(t, g, ctx, ns)
	obj := &kustomizev1.Kustomization{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "app"}}
	failed := func(message string) event.Event {
		return event.Event{Type: event.TypeWarning, Reason: "BuildFailed", Message: message}
	}

	intruder, allowed := testutil.TokenConfig(env.Config, testutil.ServiceAccountToken(g, env.Config, ns, "intruder")), testutil.TokenConfig(env.Config, testutil.ServiceAccountToken(g, env.Config, ns, DefaultEventsServiceAccount))
	poster(g, ctx, env.Config, GatingController, ns, url).Forward(ctx, obj, failed("from a client certificate"))
	poster(g, ctx, intruder, KustomizeController, ns, url).Forward(ctx, obj, failed("from another service account"))
	poster(g, ctx, allowed, HelmController, ns, url).Forward(ctx, obj, failed("from the controllers"))
	g.Eventually(box.all).WithTimeout(20 * time.Second).Should(ContainElement("from the controllers"))
	g.Eventually(func() int { return strings.Count(since(), "Giving up an event") }).WithTimeout(20*time.Second).Should(Equal(2),
		"the refused posters retry, then give up")
	g.Expect(box.all()).To(Equal([]string{"from the controllers"}))
	g.Expect(since()).To(ContainSubstring("No service-account token to post events with"))
	g.Expect(since()).To(ContainSubstring(kubeauth.ServiceAccountUser(ns, "intruder")))
	g.Expect(logs.Contains(intruder.BearerToken) || logs.Contains(allowed.BearerToken)).To(BeFalse(), "no token is logged")
}
