package notification

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kustomizev1 "github.com/windlass-dev/windlass/api/kustomize/v1"
	"github.com/windlass-dev/windlass/api/meta"
	notificationv1beta3 "github.com/windlass-dev/windlass/api/notification/v1beta3"
)

// quiet is how long a test watches for messages that must not come.
const quiet = 700 * time.Millisecond

// The seed 001 story: failures in prod go to the on-call provider, new
// frontend revisions to the frontend team's, and a failure then its
// recovery sends one failure and one resolved message.
func TestSeedStory(t *testing.T) {
	g := NewWithT(t)
	ns := env.CreateNamespace(t)
	a, b := newHook(t), newHook(t)
	createProvider(g, ns, "pager", a.URL, []*hook{a})
	createProvider(g, ns, "frontend-chat", b.URL, []*hook{b})
	oncall := createAlert(g, ns, "oncall", "pager", "error", []notificationv1beta3.EventSource{kustomizations},
		func(a *notificationv1beta3.Alert) { a.Spec.Summary = "prod on-call" })
	frontend := createAlert(g, ns, "frontend", "frontend-chat", "info",
		[]notificationv1beta3.EventSource{{Kind: kustomizev1.KustomizationKind, Name: "frontend"}})
	waitRule(g, oncall)
	waitRule(g, frontend)

	failed(ns, "backend", "HealthCheckFailed", "backend: ImagePullBackOff")
	g.Eventually(a.messages, 5*time.Second).Should(Equal([]string{"error: backend: ImagePullBackOff"}))
	applied(ns, "frontend", "main@sha1:1111111111111111111111111111111111111111")
	g.Eventually(b.messages, 5*time.Second).Should(Equal([]string{
		"info: Applied revision: main@sha1:1111111111111111111111111111111111111111"}))

	failed(ns, "frontend", "HealthCheckFailed", "frontend: Deployment not ready")
	applied(ns, "frontend", "main@sha1:2222222222222222222222222222222222222222")
	g.Eventually(a.messages, 5*time.Second).Should(Equal([]string{
		"error: backend: ImagePullBackOff",
		"error: frontend: Deployment not ready",
		"info: Resolved: Applied revision: main@sha1:2222222222222222222222222222222222222222",
	}))
	g.Eventually(b.messages, 5*time.Second).Should(Equal([]string{
		"info: Applied revision: main@sha1:1111111111111111111111111111111111111111",
		"error: frontend: Deployment not ready",
		"info: Resolved: Applied revision: main@sha1:2222222222222222222222222222222222222222",
	}))
	g.Consistently(func() int { return len(a.received()) + len(b.received()) }, quiet).Should(Equal(6))

	first := a.received()[0]
	g.Expect(first.InvolvedObject.Kind).To(Equal(kustomizev1.KustomizationKind))
	g.Expect(first.Metadata).To(HaveKeyWithValue(SummaryKey, "prod on-call"))
	g.Expect(first.Header.Get("Gotk-Component")).To(Equal("kustomize-controller"))
	g.Expect(b.received()[0].Metadata).To(HaveKeyWithValue("kustomize.toolkit.fluxcd.io/revision",
		"main@sha1:1111111111111111111111111111111111111111"))
}

// A flood of failures from the 1000 Kustomizations behind one failing
// source costs the provider one message per window, not 1000: the first
// failure at once, then, when the window closes, one that counts the
// others; while the source stays broken, one more per window. The
// dispatcher's clock stands still while the test watches, so that how long
// its steps take does not matter.
func TestFloodIsFolded(t *testing.T) {
	g := NewWithT(t)
	ns := env.CreateNamespace(t)
	a := newHook(t)
	createProvider(g, ns, "pager", a.URL, []*hook{a})
	waitRule(g, createAlert(g, ns, "oncall", "pager", "error", []notificationv1beta3.EventSource{kustomizations}))

	clock.Freeze()
	defer clock.Thaw()
	flood := func() {
		for i := range 1000 {
			failed(ns, fmt.Sprintf("app-%04d", i), "ArtifactFailed", "source 'GitRepository/"+ns+"/apps' not found")
		}
	}
	count := func() int { return len(a.received()) }
	flood()
	g.Eventually(a.messages, 5*time.Second).Should(Equal([]string{"error: source 'GitRepository/" + ns + "/apps' not found"}))
	g.Expect(a.received()[0].InvolvedObject.Name).To(Equal("app-0000"))
	g.Consistently(count, quiet).Should(Equal(1))

	clock.Advance(window)
	g.Eventually(count, 5*time.Second).Should(Equal(2))
	g.Expect(a.messages()[1]).To(HaveSuffix("(and 998 more like it)"))
	g.Expect(a.received()[1].InvolvedObject.Name).To(Equal("app-0999"))

	flood() // the source is still broken in the next window
	g.Consistently(count, quiet).Should(Equal(2), "the folded message was this window's one")
	clock.Advance(window)
	g.Eventually(count, 5*time.Second).Should(Equal(3))
	g.Expect(a.messages()[2]).To(HaveSuffix("(and 999 more like it)"))
	clock.Advance(window)
	g.Consistently(count, quiet).Should(Equal(3), "the flood is over")
}

// A missing Secret is reported on the Alert, by name; once it exists the
// Alert delivers, with the Secret's token.
func TestMissingSecret(t *testing.T) {
	g := NewWithT(t)
	ns := env.CreateNamespace(t)
	a := newHook(t)
	const token = "t0ken-of-the-hook"
	createProvider(g, ns, "hook", a.URL, []*hook{a}, func(p *notificationv1beta3.Provider) {
		p.Spec.SecretRef = &meta.LocalObjectReference{Name: "hook-token"}
	})
	alert := createAlert(g, ns, "ops", "hook", "info", []notificationv1beta3.EventSource{kustomizations})

	g.Eventually(func(g Gomega) []string { return alertEvents(g, alert) }, 10*time.Second).Should(ContainElement(
		And(HavePrefix(SecretNotFoundReason+": "), ContainSubstring("Secret 'hook-token'"))))
	_, ok := dispatcher.ProviderOf(keyOf(alert).String())
	g.Expect(ok).To(BeFalse())

	createSecret(g, ns, "hook-token", map[string]string{KeyToken: token})
	waitRule(g, alert)
	applied(ns, "apps", "main@sha1:3333333333333333333333333333333333333333")
	g.Eventually(a.received, 5*time.Second).Should(HaveLen(1))
	g.Expect(a.received()[0].Header.Get("Authorization")).To(Equal("Bearer " + token))
	g.Eventually(func(g Gomega) []string { return alertEvents(g, alert) }, 5*time.Second).Should(ContainElement(HavePrefix(ReadyReason + ": ")))
	for _, e := range alertEvents(g, alert) {
		g.Expect(e).NotTo(ContainSubstring(token))
	}
}

// A commit-status provider gets every failure that carries a revision,
// unfolded, with the key of its commitStatusExpr (which sees the Alert).
func TestCommitStatus(t *testing.T) {
	g := NewWithT(t)
	ns := env.CreateNamespace(t)
	forge := newHook(t)
	createSecret(g, ns, "forge-token", map[string]string{KeyToken: "forge-t0ken"})
	createProvider(g, ns, "forge", forge.URL+"/org/repo", []*hook{forge}, func(p *notificationv1beta3.Provider) {
		p.Spec.Type = notificationv1beta3.ProviderTypeGitHub
		p.Spec.SecretRef = &meta.LocalObjectReference{Name: "forge-token"}
		p.Spec.CommitStatusExpr = "alert.metadata.name + '/' + event.involvedObject.name"
	})
	waitRule(g, createAlert(g, ns, "ci", "forge", "info", []notificationv1beta3.EventSource{kustomizations}))

	const sha = "5555555555555555555555555555555555555555"
	failed(ns, "no-revision", "BuildFailed", "kustomize build failed")
	for i := range 5 {
		failed(ns, fmt.Sprintf("app-%d", i), "BuildFailed", "kustomize build failed", "main@sha1:"+sha)
	}
	g.Eventually(forge.received, 5*time.Second).Should(HaveLen(5))
	g.Consistently(forge.received, quiet).Should(HaveLen(5))
	var contexts []string
	for _, p := range forge.received() {
		g.Expect(p.Path).To(Equal("/api/v3/repos/org/repo/statuses/" + sha))
		var status struct{ State, Context string }
		g.Expect(json.Unmarshal(p.Body, &status)).To(Succeed())
		g.Expect(status.State).To(Equal("failure"))
		contexts = append(contexts, status.Context)
	}
	g.Expect(contexts).To(ConsistOf("ci/app-0", "ci/app-1", "ci/app-2", "ci/app-3", "ci/app-4"))
}

// Invalid Providers and Alerts are reported with a Warning event and get
// no rule.
func TestInvalidAlertsAreReported(t *testing.T) {
	tests := []struct {
		name     string
		provider func(*notificationv1beta3.Provider)
		alert    func(*notificationv1beta3.Alert)
		secret   map[string]string
		reason   string
		message  string
	}{
		{name: "link-local", provider: func(p *notificationv1beta3.Provider) { p.Spec.Address = "http://169.254.169.254/" },
			reason: InvalidProviderReason, message: "link-local"},
		{name: "aws-ipv6-metadata", provider: func(p *notificationv1beta3.Provider) { p.Spec.Address = "http://[fd00:ec2::254]/latest/api/token" },
			reason: InvalidProviderReason, message: "cloud metadata endpoint"},
		{name: "alibaba-metadata", provider: func(p *notificationv1beta3.Provider) { p.Spec.Address = "http://100.100.100.200/" },
			reason: InvalidProviderReason, message: "cloud metadata endpoint"},
		{name: "bad-expr", provider: func(p *notificationv1beta3.Provider) {
			p.Spec.Type, p.Spec.Address = notificationv1beta3.ProviderTypeGitHub, "https://github.com/org/repo"
			p.Spec.CommitStatusExpr = "event.involvedObject.name +"
		}, secret: map[string]string{KeyToken: "gh-token"}, reason: InvalidProviderReason, message: "invalid commitStatusExpr"},
		{name: "bad-regex", alert: func(a *notificationv1beta3.Alert) { a.Spec.ExclusionList = []string{"ok", "(unclosed"} },
			reason: InvalidAlertReason, message: "exclusionList[1] is not a valid regular expression"},
		{name: "no-provider", alert: func(a *notificationv1beta3.Alert) { a.Spec.ProviderRef.Name = "nowhere" },
			reason: ProviderNotFoundReason, message: "Provider 'nowhere' not found"},
		{name: "no-ca-secret", provider: func(p *notificationv1beta3.Provider) {
			p.Spec.CertSecretRef = &meta.LocalObjectReference{Name: "missing-ca"}
		}, reason: SecretNotFoundReason, message: "Secret 'missing-ca' (certSecretRef of Provider 'no-ca-secret') not found"},
		{name: "no-proxy-secret", provider: func(p *notificationv1beta3.Provider) {
			p.Spec.ProxySecretRef = &meta.LocalObjectReference{Name: "missing-proxy"}
		}, reason: SecretNotFoundReason, message: "Secret 'missing-proxy' (proxySecretRef of Provider 'no-proxy-secret') not found"},
	}
	ns := env.CreateNamespace(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			mutate := []func(*notificationv1beta3.Provider){}
			if tt.provider != nil {
				mutate = append(mutate, tt.provider)
			}
			if tt.secret != nil {
				createSecret(g, ns, tt.name+"-auth", tt.secret)
				mutate = append(mutate, func(p *notificationv1beta3.Provider) {
					p.Spec.SecretRef = &meta.LocalObjectReference{Name: tt.name + "-auth"}
				})
			}
			createProvider(g, ns, tt.name, "https://hooks.example.com/x", nil, mutate...)
			alert := createAlert(g, ns, tt.name, tt.name, "info", []notificationv1beta3.EventSource{kustomizations},
				func(a *notificationv1beta3.Alert) {
					if tt.alert != nil {
						tt.alert(a)
					}
				})
			g.Eventually(func(g Gomega) []string { return alertEvents(g, alert) }, 10*time.Second).Should(ContainElement(
				And(HavePrefix(tt.reason+": "), ContainSubstring(tt.message))))
			_, ok := dispatcher.ProviderOf(keyOf(alert).String())
			g.Expect(ok).To(BeFalse())
		})
	}
}

// What the flags change: link-local addresses are allowed with
// AllowLinkLocal, loopback ones with AllowLoopback (security-2 risk 8: by
// default a Provider cannot post to the controller's own host), and event
// sources in other namespaces refused with NoCrossNamespaceRefs.
func TestFlags(t *testing.T) {
	g := NewWithT(t)
	ns := env.CreateNamespace(t)
	ctx := context.Background()
	createProvider(g, ns, "metadata", "http://169.254.169.254/", nil)
	alert := createAlert(g, ns, "metadata", "metadata", "info", []notificationv1beta3.EventSource{kustomizations})

	allowed := &AlertReconciler{Client: env.Client, AllowLinkLocal: true}
	built, err := allowed.buildRule(ctx, alert)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(built.rule.Notifier).NotTo(BeNil())

	listener := newHook(t)
	createProvider(g, ns, "own-host", listener.URL, nil)
	own := createAlert(g, ns, "own-host", "own-host", "info", []notificationv1beta3.EventSource{kustomizations})
	_, err = (&AlertReconciler{Client: env.Client}).buildRule(ctx, own)
	g.Expect(err).To(MatchError(ContainSubstring("loopback")))
	built, err = (&AlertReconciler{Client: env.Client, AllowLoopback: true}).buildRule(ctx, own)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(built.rule.Notifier).NotTo(BeNil())

	strict := &AlertReconciler{Client: env.Client, AllowLinkLocal: true, NoCrossNamespaceRefs: true}
	alert.Spec.EventSources = append(alert.Spec.EventSources, notificationv1beta3.EventSource{Kind: "Kustomization", Name: "*", Namespace: "other"})
	_, err = strict.buildRule(ctx, alert)
	g.Expect(err).To(MatchError(ContainSubstring("cross-namespace references are not allowed")))
}

// A changed Provider address moves delivery; a suspended or deleted
// Alert delivers nothing.
func TestProviderChangeSuspendAndDelete(t *testing.T) {
	g := NewWithT(t)
	ns := env.CreateNamespace(t)
	ctx := context.Background()
	a, b := newHook(t), newHook(t)
	provider := createProvider(g, ns, "hook", a.URL, []*hook{a, b})
	alert := createAlert(g, ns, "ops", "hook", "info", []notificationv1beta3.EventSource{kustomizations})
	before := waitRule(g, alert)

	failed(ns, "apps", "BuildFailed", "first")
	g.Eventually(a.messages, 5*time.Second).Should(Equal([]string{"error: first"}))

	patch := client.MergeFrom(provider.DeepCopy())
	provider.Spec.Address = b.URL
	g.Expect(env.Client.Patch(ctx, provider, patch)).To(Succeed())
	g.Eventually(func() string {
		key, _ := dispatcher.ProviderOf(keyOf(alert).String())
		return key
	}, 10*time.Second).ShouldNot(Or(Equal(before), BeEmpty()))
	failed(ns, "apps", "BuildFailed", "second")
	g.Eventually(b.messages, 5*time.Second).Should(Equal([]string{"error: second"}))

	setSuspend(g, alert, true)
	waitNoRule(g, alert)
	failed(ns, "apps", "BuildFailed", "while suspended")
	setSuspend(g, alert, false)
	waitRule(g, alert)
	failed(ns, "apps", "BuildFailed", "third")
	g.Eventually(b.messages, 5*time.Second).Should(Equal([]string{"error: second", "error: third"}))

	g.Expect(env.Client.Delete(ctx, alert)).To(Succeed())
	waitNoRule(g, alert)
	failed(ns, "apps", "BuildFailed", "after deletion")
	g.Consistently(func() int { return len(a.received()) + len(b.received()) }, quiet).Should(Equal(3))
}

func setSuspend(g Gomega, alert *notificationv1beta3.Alert, suspend bool) {
	patch := client.MergeFrom(alert.DeepCopy())
	alert.Spec.Suspend = suspend
	g.Expect(env.Client.Patch(context.Background(), alert, patch)).To(Succeed())
}

// The values of a Provider's Secret are used (its address wins, its
// token, its headers) and never appear in events or logs, even in the
// problems they cause.
func TestSecretsNeverLeak(t *testing.T) {
	g := NewWithT(t)
	ns := env.CreateNamespace(t)
	ctx := context.Background()
	a := newHook(t)
	const (
		token    = "tok-7f3a9c"
		password = "pw-b81e44"
		header   = "hdr-5d20ce"
		path     = "path-e9c1f7"
	)
	secret := createSecret(g, ns, "hook-creds", map[string]string{
		KeyAddress: a.URL + "/hooks/" + path, KeyToken: token, KeyUsername: "bot", KeyPassword: password,
		KeyHeaders: "X-Api-Key: " + header,
	})
	createProvider(g, ns, "hook", "https://ignored.example.com/", []*hook{a}, func(p *notificationv1beta3.Provider) {
		p.Spec.SecretRef = &meta.LocalObjectReference{Name: secret.Name}
	})
	alert := createAlert(g, ns, "ops", "hook", "info", []notificationv1beta3.EventSource{kustomizations})
	waitRule(g, alert)
	applied(ns, "apps", "main@sha1:4444444444444444444444444444444444444444")
	g.Eventually(a.received, 5*time.Second).Should(HaveLen(1))
	got := a.received()[0]
	g.Expect(got.Path).To(Equal("/hooks/" + path))
	g.Expect(got.Header.Get("Authorization")).To(Equal("Bearer " + token))
	g.Expect(got.Header.Get("X-Api-Key")).To(Equal(header))

	// Kubernetes folds the events of one reason into a series that keeps
	// the first message: each problem here has its own reason.
	for _, broken := range []struct{ key, value, reason, reported string }{
		{KeyAddress, "http://169.254.169.254/latest/" + path, InvalidProviderReason, "link-local"},
		{KeyHeaders, "- " + header, InvalidSecretReason, "not a YAML map"},
	} {
		patch, err := json.Marshal(map[string]any{"stringData": map[string]string{broken.key: broken.value}})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(env.Client.Patch(ctx, secret, client.RawPatch(types.MergePatchType, patch))).To(Succeed())
		g.Eventually(func(g Gomega) []string { return alertEvents(g, alert) }, 10*time.Second).Should(ContainElement(
			And(HavePrefix(broken.reason+": "), ContainSubstring(broken.reported))))
	}
	waitNoRule(g, alert)
	all := strings.Join(alertEvents(g, alert), "\n") + logs.String()
	g.Expect(logs.Contains(keyOf(alert).String())).To(BeTrue(), "the Alert's problems are not logged")
	for _, s := range []string{token, password, header, path} {
		g.Expect(all).NotTo(ContainSubstring(s))
	}
}

func TestScrub(t *testing.T) {
	tests := []struct{ msg, want string }{
		{`POST "https://hooks.example.com/T0/B0/s3cr3t?x=1": 404`, `POST "***": 404`},
		{`token t0k3n refused`, `token *** refused`},
		{`short "ab" is kept`, `short "ab" is kept`},
	}
	for _, tt := range tests {
		NewWithT(t).Expect(scrub(tt.msg, []string{"https://hooks.example.com/T0/B0/s3cr3t?x=1", "t0k3n", "ab", ""})).To(Equal(tt.want))
	}
}
