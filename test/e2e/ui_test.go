package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	. "github.com/onsi/gomega"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kustomizev1 "github.com/windlass-dev/windlass/api/kustomize/v1"
	"github.com/windlass-dev/windlass/api/meta"
	sourcev1 "github.com/windlass-dev/windlass/api/source/v1"
	"github.com/windlass-dev/windlass/internal/conditions"
	"github.com/windlass-dev/windlass/internal/testutil"
	"github.com/windlass-dev/windlass/internal/testutil/browser"
	"github.com/windlass-dev/windlass/internal/testutil/childproc"
)

// browserTimeout bounds each step of a browser story.
const browserTimeout = 30 * time.Second

// The web UI, in Chromium: a Kustomization whose build fails shows its
// reason on the overview, under "Needs attention", and on its own page,
// which its link there opens, with the controller's event and log lines
// about it.
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
	g.Expect(browser.Do(tab, browserTimeout, browser.Navigate("http://"+addrs[0]+"/"))).To(Succeed())
	attention, err := browser.Text(tab, browserTimeout, "#attention")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(attention).To(And(ContainSubstring("Kustomization "+ns+"/app"), ContainSubstring(kustomizev1.BuildFailedReason),
		ContainSubstring("missing.yaml")))

	g.Expect(browser.Do(tab, browserTimeout, browser.Click(`#attention a[href="/object/Kustomization/`+ns+`/app"]`))).To(Succeed())
	state, err := browser.Text(tab, browserTimeout, "#state")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(state).To(Equal("Failing"))
	reason, err := browser.Text(tab, browserTimeout, "#reason")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(reason).To(Equal(kustomizev1.BuildFailedReason))
	conds, err := browser.Text(tab, browserTimeout, "#conditions")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(conds).To(ContainSubstring("missing.yaml"))
	// The controller's events about it, kept in process.
	g.Eventually(func() (string, error) { return browser.Text(tab, time.Second, "#events") }, timeout, interval).
		Should(And(ContainSubstring("Warning"), ContainSubstring(kustomizev1.BuildFailedReason)))
	// And the controller's log lines about it, with the error.
	g.Eventually(func() (string, error) { return browser.Text(tab, time.Second, "#logs") }, timeout, interval).
		Should(And(ContainSubstring("error"), ContainSubstring("Reconciliation failed"), ContainSubstring("missing.yaml")))
}

// `windlass ui` serves the UI on this machine from a kubeconfig, as its
// user: a service account that may list and watch Kustomizations of one
// namespace alone sees, with -n, that namespace's Kustomizations and no
// other object, and is told which kinds are left out; a Kustomization
// whose source does not exist yet is Progressing (it waits), not Failing;
// suspending it from the page is refused, as kubectl would refuse it.
func TestUI_LocalServesTheClusterOfAKubeconfig(t *testing.T) {
	g := NewWithT(t)
	ns, other := env.CreateNamespace(t), env.CreateNamespace(t)
	for _, namespace := range []string{ns, other} {
		g.Expect(env.Client.Create(context.Background(), &kustomizev1.Kustomization{
			ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "waits"},
			Spec: kustomizev1.KustomizationSpec{Interval: metav1.Duration{Duration: time.Hour}, Path: "./",
				SourceRef: kustomizev1.CrossNamespaceSourceReference{Kind: sourcev1.GitRepositoryKind, Name: "not-yet"}},
		})).To(Succeed())
	}
	addrs, err := childproc.FreeAddrs(1)
	g.Expect(err).NotTo(HaveOccurred())
	token := testutil.ServiceAccountToken(g, env.Config, ns, "viewer")
	testutil.GrantRole(g, env.Client, ns, "view-kustomizations", ns, "viewer", rbacv1.PolicyRule{
		APIGroups: []string{kustomizev1.GroupVersion.Group}, Resources: []string{"kustomizations"}, Verbs: []string{"get", "list", "watch"}})
	viewer := clientcmdapi.NewConfig()
	viewer.Clusters["test"] = &clientcmdapi.Cluster{Server: env.Config.Host, CertificateAuthorityData: env.Config.CAData}
	viewer.AuthInfos["viewer"] = &clientcmdapi.AuthInfo{Token: token}
	viewer.Contexts["viewer"] = &clientcmdapi.Context{Cluster: "test", AuthInfo: "viewer", Namespace: ns}
	viewer.CurrentContext = "viewer"
	viewerConfig := filepath.Join(t.TempDir(), "kubeconfig")
	g.Expect(clientcmd.WriteToFile(*viewer, viewerConfig)).To(Succeed())
	proc, err := childproc.Start(windlassCommand(context.Background(), "ui", "--kubeconfig", viewerConfig, "-n", ns,
		"--addr", addrs[0], "--open=false"))
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() {
		proc.Kill()
		if t.Failed() {
			t.Logf("windlass ui output:\n%s", proc.Output())
		}
	})
	g.Eventually(proc.Output, timeout, interval).Should(ContainSubstring("Serving the web UI at http://" + addrs[0] + "/"))
	// The line that names the kinds left out follows, in a write of its own.
	g.Eventually(proc.Output, timeout, interval).Should(MatchRegexp(`Left out, as you may not list and watch them here: GitRepository, .*HelmRelease.*\n`))
	g.Expect(proc.Output()).NotTo(MatchRegexp(`Left out.*Kustomization`))

	tab := browser.New(t)
	g.Expect(browser.Do(tab, browserTimeout, browser.Navigate("http://"+addrs[0]+"/?kind=Kustomization"))).To(Succeed())
	g.Eventually(func() (string, error) {
		g.Expect(browser.Do(tab, browserTimeout, chromedp.Reload())).To(Succeed())
		return browser.Text(tab, browserTimeout, "#objects")
	}, timeout, interval).Should(And(ContainSubstring("Kustomization "+ns+"/waits"), ContainSubstring("Progressing")))
	objects, err := browser.Text(tab, browserTimeout, "#objects")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(objects).NotTo(ContainSubstring(other), "only the namespace of -n")

	// The viewer may not patch: suspending is refused, as kubectl would be.
	g.Expect(browser.Do(tab, browserTimeout, browser.Navigate("http://"+addrs[0]+"/object/Kustomization/"+ns+"/waits"),
		browser.Click("#action-suspend"))).To(Succeed())
	// The answer replaces the page once it comes.
	g.Eventually(func() (string, error) { return browser.Text(tab, time.Second, "body") }, timeout, interval).
		Should(And(ContainSubstring("The API server refused you"), ContainSubstring("cannot patch")))
	got := &kustomizev1.Kustomization{}
	g.Expect(env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "waits"}, got)).To(Succeed())
	g.Expect(got.Spec.Suspend).To(BeFalse())
}

// An open page follows its object live: a Kustomization's status changes
// (written here, for a shard no controller runs) and the page, not
// reloaded, shows the new state. Its user (an administrator) suspends it
// from the page.
func TestUI_OpenPageFollowsItsObject(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.CreateNamespace(t)
	ks := &kustomizev1.Kustomization{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "app",
		Labels: map[string]string{shardLabel: "nobody-" + ns}},
		Spec: kustomizev1.KustomizationSpec{Interval: metav1.Duration{Duration: time.Hour}, Path: "./",
			SourceRef: kustomizev1.CrossNamespaceSourceReference{Kind: sourcev1.GitRepositoryKind, Name: "app"}}}
	g.Expect(env.Client.Create(ctx, ks)).To(Succeed())
	setReady := func(status metav1.ConditionStatus, reason, msg string) {
		ks.Status.Conditions = []metav1.Condition{{Type: meta.ReadyCondition, Status: status, Reason: reason, Message: msg,
			ObservedGeneration: ks.Generation, LastTransitionTime: metav1.Now()}}
		g.Expect(env.Client.Status().Update(ctx, ks)).To(Succeed())
	}
	setReady(metav1.ConditionFalse, kustomizev1.BuildFailedReason, "the first build failed")
	addrs, err := childproc.FreeAddrs(1)
	g.Expect(err).NotTo(HaveOccurred())
	proc, err := childproc.Start(windlassCommand(ctx, "ui", "--kubeconfig", kubeconfig, "-n", ns, "--addr", addrs[0], "--open=false"))
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(proc.Kill)
	g.Eventually(proc.Output, timeout, interval).Should(ContainSubstring("Serving the web UI"))

	tab := browser.New(t)
	g.Expect(browser.Do(tab, browserTimeout, browser.Navigate("http://"+addrs[0]+"/object/Kustomization/"+ns+"/app"))).To(Succeed())
	state, err := browser.Text(tab, browserTimeout, "#state")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(state).To(Equal("Failing"))

	changed := time.Now()
	setReady(metav1.ConditionTrue, kustomizev1.ReconciliationSucceededReason, "Applied revision: main@sha1:1234")
	g.Eventually(func() (string, error) { return browser.Text(tab, browserTimeout, "#state") }, timeout, 50*time.Millisecond).Should(Equal("Ready"))
	t.Logf("the open page showed the change %dms after it was written", time.Since(changed).Milliseconds())
	message, err := browser.Text(tab, browserTimeout, "#message")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(message).To(Equal("Applied revision: main@sha1:1234"))

	// The user may: suspending from the page suspends it.
	g.Expect(browser.Do(tab, browserTimeout, browser.Click("#action-suspend"))).To(Succeed())
	g.Eventually(func() (string, error) { return browser.Text(tab, browserTimeout, "#state") }, timeout, 50*time.Millisecond).Should(Equal("Suspended"))
	// The page the action returns to says so (a live update of the page
	// it left may show Suspended first).
	g.Eventually(func() (string, error) { return browser.Text(tab, time.Second, "#done") }, timeout, interval).
		Should(Equal("suspend: done"))
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(ks), ks)).To(Succeed())
	g.Expect(ks.Spec.Suspend).To(BeTrue())
}
