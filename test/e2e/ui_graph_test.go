package e2e

import (
	"context"
	"fmt"
	"testing"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gatingv1alpha1 "github.com/windlass-dev/windlass/api/gating/v1alpha1"
	kustomizev1 "github.com/windlass-dev/windlass/api/kustomize/v1"
	"github.com/windlass-dev/windlass/api/meta"
	sourcev1 "github.com/windlass-dev/windlass/api/source/v1"
	"github.com/windlass-dev/windlass/internal/conditions"
	"github.com/windlass-dev/windlass/internal/testutil/browser"
	"github.com/windlass-dev/windlass/internal/testutil/childproc"
)

// The graph, in Chromium: a GitRepository; a Kustomization, infra, that
// applies a ConfigMap from it; another, app, that depends on infra and
// waits behind a gate closed by default. The graph shows each with its
// state, the edges' labels (dependsOn, closed) and infra's applied object
// counted; clicking app's node opens app's page.
func TestUI_GraphShowsWhatFeedsWhat(t *testing.T) {
	g := NewWithT(t)
	ns := env.CreateNamespace(t)
	shard := "ui-graph-" + ns
	addrs, err := childproc.FreeAddrs(1)
	g.Expect(err).NotTo(HaveOccurred())
	startShardController(t, g, shard, t.TempDir(), "--ui-addr", addrs[0])
	configMap := func(name string) string {
		return "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: " + name + "}\ndata: {v: \"1\"}\n"
	}
	url, _ := servedRepo(t, "graph.git", map[string]string{
		"infra/kustomization.yaml": "resources: [cm.yaml]\n", "infra/cm.yaml": configMap("infra"),
		"app/kustomization.yaml": "resources: [cm.yaml]\n", "app/cm.yaml": configMap("app"),
	})
	createSharded(g, shard, &gatingv1alpha1.Gate{}, fmt.Sprintf(`
apiVersion: gating.toolkit.fluxcd.io/v1alpha1
kind: Gate
metadata: {name: freeze, namespace: %s}
spec: {interval: 1h, default: closed, window: 1h}
`, ns))
	createSharded(g, shard, &sourcev1.GitRepository{}, gitRepositoryYAML(ns, "repo", url))
	kustomization := func(name, more string) string {
		return fmt.Sprintf(`
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: %[1]s, namespace: %[2]s}
spec: {interval: 10m, path: ./%[1]s, prune: true, targetNamespace: %[2]s, sourceRef: {kind: GitRepository, name: repo}%[3]s}
`, name, ns, more)
	}
	infra := createSharded(g, shard, &kustomizev1.Kustomization{}, kustomization("infra", ""))
	createSharded(g, shard, &kustomizev1.Kustomization{}, kustomization("app", ", dependsOn: [{name: infra}], gates: [{name: freeze}]"))
	g.Eventually(func(g Gomega) {
		got := &kustomizev1.Kustomization{}
		g.Expect(env.Client.Get(context.Background(), client.ObjectKeyFromObject(infra), got)).To(Succeed())
		g.Expect(conditions.IsTrue(got, meta.ReadyCondition)).To(BeTrue())
		g.Expect(got.Status.Inventory).NotTo(BeNil())
	}, timeout, interval).Should(Succeed())

	tab := browser.New(t)
	g.Expect(browser.Do(tab, browserTimeout, browser.Navigate("http://"+addrs[0]+"/graph?namespace="+ns))).To(Succeed())
	// The page follows the objects live: app is held once its controller
	// has seen the gate.
	g.Eventually(func() (string, error) { return browser.Text(tab, browserTimeout, "#graph") }, timeout, interval).Should(And(
		ContainSubstring("closed\n"+ns+"/freeze"),
		ContainSubstring("GitRepository · Ready\n"+ns+"/repo"),
		ContainSubstring("Kustomization · Ready\n"+ns+"/infra"),
		ContainSubstring("Kustomization · Held\n"+ns+"/app"),
		ContainSubstring("Applied\n1 object"),
		ContainSubstring("dependsOn"), ContainSubstring("closed")))
	list, err := browser.Text(tab, browserTimeout, "#graph-nodes")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(list).To(ContainSubstring("Kustomization " + ns + "/infra (dependsOn)"))
	g.Expect(list).To(ContainSubstring("Gate " + ns + "/freeze (gate, closed)"))

	g.Expect(browser.Do(tab, browserTimeout, browser.Click("#node-Kustomization_"+ns+"_app"))).To(Succeed())
	state, err := browser.Text(tab, browserTimeout, "#state") // on the object page alone
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(state).To(Equal("Held"))
	title, err := browser.Text(tab, browserTimeout, "h1")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(title).To(Equal("Kustomization " + ns + "/app"))
}
