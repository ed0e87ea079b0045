package e2e

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gatingv1alpha1 "github.com/windlass-dev/windlass/api/gating/v1alpha1"
	kustomizev1 "github.com/windlass-dev/windlass/api/kustomize/v1"
	"github.com/windlass-dev/windlass/internal/testutil/browser"
	"github.com/windlass-dev/windlass/internal/testutil/childproc"
)

// The web UI's gate page, in Chromium, with the real controller: closing
// the gate there, with a reason, holds the next commit back (the page
// shows the Kustomization held); opening it applies that commit.
func TestUI_GateClosedFromItsPageHoldsTheNextCommit(t *testing.T) {
	logControllerOnFailure(t)
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.CreateNamespace(t)
	app := newGatedApp(t, g, ns, "release", "opened", "kustomize.toolkit.fluxcd.io/v1", "app")
	first, repo, value := app.first, app.repo, app.value
	g.Eventually(value, timeout, interval).Should(Equal("1"))

	addrs, err := childproc.FreeAddrs(1)
	g.Expect(err).NotTo(HaveOccurred())
	proc, err := childproc.Start(windlassCommand(ctx, "ui", "--kubeconfig", kubeconfig, "-n", ns, "--addr", addrs[0], "--open=false"))
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(proc.Kill)
	g.Eventually(proc.Output, timeout, interval).Should(ContainSubstring("Serving the web UI"))
	page := "http://" + addrs[0] + "/object/Gate/" + ns + "/release"
	tab := browser.New(t)
	text := func(selector string) func() (string, error) {
		return func() (string, error) { return browser.Text(tab, browserTimeout, selector) }
	}
	g.Expect(browser.Do(tab, browserTimeout, browser.Navigate(page))).To(Succeed())
	g.Eventually(text(".gate-state"), timeout, interval).Should(HavePrefix("Open"))

	// Close it, with a reason: the page shows it closed, and why.
	g.Expect(browser.Do(tab, browserTimeout, browser.SendKeys("#gate-reason", "release freeze OPS-12"),
		browser.SendKeys("#gate-for", "2h"), browser.Click("#action-close"))).To(Succeed())
	g.Eventually(text(".gate-state"), timeout, interval).Should(And(HavePrefix("Closed"),
		ContainSubstring("reason: release freeze OPS-12")))
	gate := &gatingv1alpha1.Gate{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "release"}, gate)).To(Succeed())
	g.Expect(gate.GetWindow().String()).To(Equal("2h0m0s"))

	// The next commit: the source fetches it, the Kustomization is held.
	second := repo.MustCommit(t, "main", configMapFiles("2"), "two")
	_, errOut, code := runCLI(g, "reconcile", "source", "git", "app", "-n", ns, "--timeout", "1m")
	g.Expect(code).To(Equal(0), errOut)
	waitReady(g, client.ObjectKey{Namespace: ns, Name: "app"}, "main@sha1:"+second)
	g.Eventually(text("#consumers"), timeout, interval).Should(And(ContainSubstring("Kustomization "+ns+"/app"), ContainSubstring("Held")))
	ks := &kustomizev1.Kustomization{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "app"}, ks)).To(Succeed())
	g.Expect(ks.Status.LastAppliedRevision).To(Equal("main@sha1:"+first), "held back")
	g.Expect(value()).To(Equal("1"))

	// Open it: the held commit is applied.
	g.Expect(browser.Do(tab, browserTimeout, browser.Click("#action-open"))).To(Succeed())
	defer func() {
		if t.Failed() {
			_ = env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "release"}, gate)
			_ = env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "app"}, ks)
			t.Logf("the gate: annotations %v, status %+v", gate.Annotations, gate.Status)
			t.Logf("the Kustomization: status %+v", ks.Status)
		}
	}()
	g.Eventually(value, timeout, interval).Should(Equal("2"))
	g.Eventually(text(".gate-state"), timeout, interval).Should(HavePrefix("Open"))
	g.Eventually(func() string {
		g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "app"}, ks)).To(Succeed())
		return ks.Status.LastAppliedRevision
	}, timeout, interval).Should(Equal("main@sha1:" + second))

	// The gates page lists it, open, with its week ahead.
	g.Expect(browser.Do(tab, browserTimeout, browser.Navigate("http://"+addrs[0]+"/gates?namespace="+ns))).To(Succeed())
	g.Eventually(text("#gate-"+ns+"-release"), timeout, interval).Should(And(ContainSubstring("1 consumer"), ContainSubstring("Open")))
}
