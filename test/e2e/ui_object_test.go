package e2e

import (
	"context"
	"fmt"
	"testing"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kustomizev1 "github.com/windlass-dev/windlass/api/kustomize/v1"
	sourcev1 "github.com/windlass-dev/windlass/api/source/v1"
	"github.com/windlass-dev/windlass/internal/gitserver"
	"github.com/windlass-dev/windlass/internal/testutil/browser"
	"github.com/windlass-dev/windlass/internal/testutil/childproc"
)

// The page of a Kustomization, in Chromium, with the real controller: it
// traces the object back to the commit its source fetched (author and
// subject) and lists the revision it applied; while it is suspended and
// its source moves on, "What would the next revision change?" shows the
// ConfigMap's new value in a diff and the removed object as deleted, and
// writes nothing; the health of what it applied is read from the cluster,
// and a Deployment's page of pods says none runs; resumed and reconciled
// with its source from its page in `windlass ui`, it applies what the
// preview showed.
func TestUI_ObjectPagePreviewsTheNextRevision(t *testing.T) {
	logControllerOnFailure(t)
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.CreateNamespace(t)
	shard := "ui-" + ns
	addrs, err := childproc.FreeAddrs(1)
	g.Expect(err).NotTo(HaveOccurred())
	startShardController(t, g, shard, t.TempDir(), "--ui-addr", addrs[0])
	srv := gitserver.NewForTest(t)
	base := srv.MustStartHTTP(t)
	repo := srv.MustInitRepo(t, "app.git", "main")
	first := repo.MustCommit(t, "main", map[string]string{"deploy/cm.yaml": uiConfigMap("app", "1"), "deploy/old.yaml": uiConfigMap("old", "1"),
		"deploy/web.yaml": uiDeployment}, "First")
	createSharded(g, shard, &sourcev1.GitRepository{}, gitRepositoryYAML(ns, "app", base+"/app.git"))
	ks := createSharded(g, shard, &kustomizev1.Kustomization{}, fmt.Sprintf(`
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: app, namespace: %[1]s}
spec: {interval: 10m, path: ./deploy, prune: true, targetNamespace: %[1]s, sourceRef: {kind: GitRepository, name: app}}
`, ns))
	key := client.ObjectKeyFromObject(ks)
	waitApplied(g, key, "main@sha1:"+first)
	_, errOut, code := runCLI(g, "suspend", "kustomization", "app", "-n", ns)
	g.Expect(code).To(Equal(0), errOut)

	next := repo.MustCommit(t, "main", map[string]string{"deploy/cm.yaml": uiConfigMap("app", "2")}, "Raise v to 2")
	next, err = repo.Remove("main", []string{"deploy/old.yaml"}, "Drop the old ConfigMap")
	g.Expect(err).NotTo(HaveOccurred())
	_, errOut, code = runCLI(g, "reconcile", "source", "git", "app", "-n", ns, "--timeout", "1m")
	g.Expect(code).To(Equal(0), errOut)
	waitReady(g, key, "main@sha1:"+next)

	tab := browser.New(t)
	text := func(selector string) func() (string, error) {
		return func() (string, error) { return browser.Text(tab, browserTimeout, selector) }
	}
	page := "http://" + addrs[0] + "/object/Kustomization/" + ns + "/app"
	g.Expect(browser.Do(tab, browserTimeout, browser.Navigate(page))).To(Succeed())
	g.Eventually(text("#trace"), timeout, interval).Should(And(ContainSubstring("GitRepository "+ns+"/app"),
		ContainSubstring("main@sha1:"+next), ContainSubstring("Drop the old ConfigMap"), ContainSubstring("Windlass Test")))
	g.Eventually(text("#applied"), timeout, interval).Should(ContainSubstring("main@sha1:" + first))

	g.Expect(browser.Do(tab, browserTimeout, browser.Click("#preview-link"))).To(Succeed())
	g.Eventually(text("#preview-summary"), timeout, interval).Should(ContainSubstring("main@sha1:" + next))
	g.Eventually(text("#preview"), timeout, interval).Should(And(
		MatchRegexp(`drifted ConfigMap/`+ns+`/app\s`), ContainSubstring(`+  v: "2"`), ContainSubstring(`-  v: "1"`),
		ContainSubstring("deleted ConfigMap/"+ns+"/old")))
	g.Expect(configMapValue(ctx, env.Client, client.ObjectKey{Namespace: ns, Name: "app"})).To(Equal("1"), "the preview wrote nothing")
	g.Expect(configMapValue(ctx, env.Client, client.ObjectKey{Namespace: ns, Name: "old"})).To(Equal("1"))

	g.Expect(browser.Do(tab, browserTimeout, browser.Navigate(page))).To(Succeed())
	g.Expect(browser.Do(tab, browserTimeout, browser.Click("#inventory-link"))).To(Succeed())
	g.Eventually(text("#inventory-health"), timeout, interval).Should(And(
		MatchRegexp(`ConfigMap/`+ns+`/app\s+Current`), MatchRegexp(`ConfigMap/`+ns+`/old\s+Current`), ContainSubstring("Deployment/"+ns+"/web")))

	// The Deployment's pods: none runs, as no kube-controller-manager
	// makes them here.
	g.Expect(browser.Do(tab, browserTimeout, browser.Click(`#inventory-health a[href*="_web_apps_Deployment"]`))).To(Succeed())
	g.Eventually(text("#pods"), timeout, interval).Should(ContainSubstring("No pod runs for it."))

	// The controller's UI, without sign-in, is read-only: `windlass ui`
	// acts as its user. Resume it there, and reconcile it with its source:
	// what the preview showed is applied.
	local, err := childproc.FreeAddrs(1)
	g.Expect(err).NotTo(HaveOccurred())
	proc, err := childproc.Start(windlassCommand(ctx, "ui", "--kubeconfig", kubeconfig, "-n", ns, "--addr", local[0], "--open=false"))
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(proc.Kill)
	g.Eventually(proc.Output, timeout, interval).Should(ContainSubstring("Serving the web UI"))
	g.Expect(browser.Do(tab, browserTimeout, browser.Navigate("http://"+local[0]+"/object/Kustomization/"+ns+"/app"))).To(Succeed())
	g.Expect(browser.Do(tab, browserTimeout, browser.Click("#action-resume"))).To(Succeed())
	g.Eventually(text("#done"), timeout, interval).Should(Equal("resume: done"))
	g.Expect(browser.Do(tab, browserTimeout, browser.Click("#action-reconcile-with-source"))).To(Succeed())
	g.Eventually(text("#done"), timeout, interval).Should(Equal("reconcile with source: done"))
	waitApplied(g, key, "main@sha1:"+next)
	g.Eventually(func() string { return configMapValue(ctx, env.Client, client.ObjectKey{Namespace: ns, Name: "app"}) }, timeout, interval).
		Should(Equal("2"))
	g.Eventually(func() string { return configMapValue(ctx, env.Client, client.ObjectKey{Namespace: ns, Name: "old"}) }, timeout, interval).
		Should(Equal("<gone>"))
}

// uiDeployment is a Deployment of no replica.
const uiDeployment = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 0
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: web, image: web:1}]}
`

// uiConfigMap is a ConfigMap name whose v is value.
func uiConfigMap(name, value string) string {
	return "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: " + name + "\ndata:\n  v: \"" + value + "\"\n"
}
