package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kustomizev1 "github.com/windlass-dev/windlass/api/kustomize/v1"
	"github.com/windlass-dev/windlass/api/meta"
	sourcev1 "github.com/windlass-dev/windlass/api/source/v1"
	"github.com/windlass-dev/windlass/internal/conditions"
	"github.com/windlass-dev/windlass/internal/testutil/browser"
	"github.com/windlass-dev/windlass/internal/testutil/childproc"
)

// browserTimeout bounds each step of a browser story.
const browserTimeout = 30 * time.Second

// The web UI, in Chromium: a Kustomization whose build fails shows its
// reason on the overview, under "Needs attention", and on its own page,
// which its link there opens.
func TestUI_FailingKustomizationShowsItsReason(t *testing.T) {
	g := NewWithT(t)
	ns := env.CreateNamespace(t)
	shard := "ui-" + ns
	addrs, err := childproc.FreeAddrs(1)
	g.Expect(err).NotTo(HaveOccurred())
	startShardController(t, g, shard, t.TempDir(), "--ui-addr", addrs[0])
	url, _ := servedRepo(t, "ui.git", map[string]string{"deploy/kustomization.yaml": "resources: [missing.yaml]\n"})
	createSharded(g, shard, &sourcev1.GitRepository{}, gitRepositoryYAML(ns, "app", url))
	ks := createSharded(g, shard, &kustomizev1.Kustomization{}, fmt.Sprintf(`
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: app, namespace: %s}
spec: {interval: 10m, path: ./deploy, prune: true, sourceRef: {kind: GitRepository, name: app}}
`, ns))
	g.Eventually(func(g Gomega) string {
		got := &kustomizev1.Kustomization{}
		g.Expect(env.Client.Get(context.Background(), client.ObjectKeyFromObject(ks), got)).To(Succeed())
		return conditions.Reason(got, meta.ReadyCondition)
	}, timeout, interval).Should(Equal(kustomizev1.BuildFailedReason))

	tab := browser.New(t)
	g.Expect(browser.Do(tab, browserTimeout, chromedp.Navigate("http://"+addrs[0]+"/"))).To(Succeed())
	attention, err := browser.Text(tab, browserTimeout, "#attention")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(attention).To(And(ContainSubstring("Kustomization "+ns+"/app"), ContainSubstring(kustomizev1.BuildFailedReason),
		ContainSubstring("missing.yaml")))

	g.Expect(browser.Do(tab, browserTimeout, chromedp.Click(`#attention a[href="/object/Kustomization/`+ns+`/app"]`))).To(Succeed())
	state, err := browser.Text(tab, browserTimeout, "#state")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(state).To(Equal("Failing"))
	reason, err := browser.Text(tab, browserTimeout, "#reason")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(reason).To(Equal(kustomizev1.BuildFailedReason))
	conds, err := browser.Text(tab, browserTimeout, "#conditions")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(conds).To(ContainSubstring("missing.yaml"))
}
