package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	. "github.com/onsi/gomega"
	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kustomizev1 "github.com/windlass-dev/windlass/api/kustomize/v1"
	"github.com/windlass-dev/windlass/internal/testutil"
	"github.com/windlass-dev/windlass/internal/testutil/browser"
	"github.com/windlass-dev/windlass/internal/testutil/childproc"
	"github.com/windlass-dev/windlass/internal/testutil/testservers"
)

// waitingKustomization is a Kustomization whose source never comes.
const waitingKustomization = `
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: app, namespace: %s}
spec: {interval: 1h, path: ./, sourceRef: {kind: GitRepository, name: not-yet}}
`

// The controller's web UI with sign-in, in Chromium: users sign in through
// a real OpenID provider (or with a Kubernetes token) and each sees and
// does what RBAC lets them: alice may suspend in her namespace and does;
// bob may only read, and his click on suspend is refused; neither sees
// another namespace.
func TestUI_SignInThroughOIDCActsAsTheUser(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns, other := env.CreateNamespace(t), env.CreateNamespace(t)
	shard := "signin-" + ns
	addrs, err := childproc.FreeAddrs(1)
	g.Expect(err).NotTo(HaveOccurred())
	ui := "http://" + addrs[0]
	provider := testservers.StartOIDCProvider(t, []testservers.OIDCUser{
		{Username: "alice", Password: "alice-password", Email: "alice@example.com"},
		{Username: "bob", Password: "bob-password", Email: "bob@example.com"},
	}, ui+"/auth/callback")
	secretFile := filepath.Join(t.TempDir(), "client-secret")
	g.Expect(os.WriteFile(secretFile, []byte(provider.ClientSecret+"\n"), 0o600)).To(Succeed())
	startShardController(t, g, shard, t.TempDir(), "--ui-addr", addrs[0], "--ui-signin", "oidc,token",
		"--ui-oidc-issuer-url", provider.Issuer, "--ui-oidc-client-id", provider.ClientID,
		"--ui-oidc-client-secret-file", secretFile, "--ui-oidc-redirect-url", ui+"/auth/callback")
	waitServing(g, ui)
	for _, namespace := range []string{ns, other} {
		createSharded(g, shard, &kustomizev1.Kustomization{}, fmt.Sprintf(waitingKustomization, namespace))
	}
	read := rbacv1.PolicyRule{APIGroups: []string{kustomizev1.GroupVersion.Group}, Resources: []string{"kustomizations"},
		Verbs: []string{"get", "list", "watch"}}
	patch := read
	patch.Verbs = append([]string{"patch"}, read.Verbs...)
	testutil.GrantRoleToUser(g, env.Client, ns, "alice-operates", "alice@example.com", patch)
	testutil.GrantRoleToUser(g, env.Client, ns, "bob-reads", "bob@example.com", read)

	tab := browser.New(t)
	text := func(selector string) func() (string, error) {
		return func() (string, error) { return browser.Text(tab, time.Second, selector) }
	}
	signIn := func(user, password string) {
		g.Expect(browser.Do(tab, browserTimeout, browser.Navigate(ui+"/object/Kustomization/"+ns+"/app"))).To(Succeed())
		g.Eventually(text("h1"), timeout, interval).Should(Equal("Sign in"), "the UI sends a stranger to sign in")
		g.Expect(browser.Do(tab, browserTimeout, browser.Click("#signin-oidc"))).To(Succeed())
		g.Expect(browser.Do(tab, browserTimeout, chromedp.WaitVisible("#username"), browser.SendKeys("#username", user),
			browser.SendKeys("#password", password), chromedp.Submit("#password"))).To(Succeed())
		g.Eventually(text("#user"), timeout, interval).Should(ContainSubstring("Signed in as " + user + "@example.com"))
		g.Eventually(text("h1"), timeout, interval).Should(Equal("Kustomization "+ns+"/app"), "back on the page asked for")
	}
	suspended := func() bool {
		ks := &kustomizev1.Kustomization{}
		g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "app"}, ks)).To(Succeed())
		return ks.Spec.Suspend
	}

	// bob may read: he sees his namespace only, and may not suspend.
	signIn("bob", "bob-password")
	g.Expect(browser.Do(tab, browserTimeout, browser.Navigate(ui+"/?kind=Kustomization"))).To(Succeed())
	g.Eventually(text("#objects"), timeout, interval).Should(And(ContainSubstring("Kustomization "+ns+"/app"), Not(ContainSubstring(other))))
	g.Expect(browser.Do(tab, browserTimeout, browser.Navigate(ui+"/object/Kustomization/"+other+"/app"))).To(Succeed())
	g.Eventually(text("body"), timeout, interval).Should(ContainSubstring("no Kustomization " + other + "/app"))
	g.Expect(browser.Do(tab, browserTimeout, browser.Navigate(ui+"/object/Kustomization/"+ns+"/app"),
		browser.Click("#action-suspend"))).To(Succeed())
	g.Eventually(text("body"), timeout, interval).Should(And(ContainSubstring("The API server refused you"),
		ContainSubstring(`user "bob@example.com" cannot patch`)))
	g.Expect(suspended()).To(BeFalse())

	// alice may suspend, and does, as herself.
	g.Expect(browser.Do(tab, browserTimeout, browser.Navigate(ui+"/"), browser.Click("#sign-out"))).To(Succeed())
	g.Eventually(text("h1"), timeout, interval).Should(Equal("Sign in"))
	signIn("alice", "alice-password")
	g.Expect(browser.Do(tab, browserTimeout, browser.Click("#action-suspend"))).To(Succeed())
	g.Eventually(text("#done"), timeout, interval).Should(Equal("suspend: done"))
	g.Expect(suspended()).To(BeTrue())
}

// A Kubernetes token signs in too: the API server names its user, here a
// service account that may read one namespace.
func TestUI_SignInWithAToken(t *testing.T) {
	g := NewWithT(t)
	ns := env.CreateNamespace(t)
	shard := "token-" + ns
	addrs, err := childproc.FreeAddrs(1)
	g.Expect(err).NotTo(HaveOccurred())
	ui := "http://" + addrs[0]
	startShardController(t, g, shard, t.TempDir(), "--ui-addr", addrs[0], "--ui-signin", "token", "--ui-read-only")
	waitServing(g, ui)
	createSharded(g, shard, &kustomizev1.Kustomization{}, fmt.Sprintf(waitingKustomization, ns))
	token := testutil.ServiceAccountToken(g, env.Config, ns, "viewer")
	testutil.GrantRole(g, env.Client, ns, "view-kustomizations", ns, "viewer", rbacv1.PolicyRule{
		APIGroups: []string{kustomizev1.GroupVersion.Group}, Resources: []string{"kustomizations"}, Verbs: []string{"get", "list", "watch"}})

	tab := browser.New(t)
	g.Expect(browser.Do(tab, browserTimeout, browser.Navigate(ui+"/signin"), browser.SendKeys("#token", "not-a-token"),
		browser.Click("#signin-token"))).To(Succeed())
	g.Eventually(func() (string, error) { return browser.Text(tab, time.Second, "#signin-error") }, timeout, interval).
		Should(Equal("The API server did not accept this token."))
	g.Expect(browser.Do(tab, browserTimeout, browser.SendKeys("#token", token), browser.Click("#signin-token"))).To(Succeed())
	g.Eventually(func() (string, error) { return browser.Text(tab, time.Second, "#user") }, timeout, interval).
		Should(ContainSubstring("Signed in as system:serviceaccount:" + ns + ":viewer"))
	g.Expect(browser.Do(tab, browserTimeout, browser.Navigate(ui+"/object/Kustomization/"+ns+"/app"))).To(Succeed())
	g.Eventually(func() (string, error) { return browser.Text(tab, time.Second, "h1") }, timeout, interval).
		Should(Equal("Kustomization " + ns + "/app"))
	g.Eventually(func() (string, error) { return browser.Text(tab, time.Second, "main") }, timeout, interval).
		Should(And(ContainSubstring("Conditions"), Not(ContainSubstring("suspend"))), "--ui-read-only offers no action")
}

// waitServing waits until the UI at ui serves its sign-in page.
func waitServing(g *WithT, ui string) {
	g.Eventually(func(g Gomega) string { return scrape(g, ui+"/signin") }, timeout, interval).Should(ContainSubstring("<h1>Sign in</h1>"))
}
