package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	helmv2 "github.com/windlass-dev/windlass/api/helm/v2"
	kustomizev1 "github.com/windlass-dev/windlass/api/kustomize/v1"
	"github.com/windlass-dev/windlass/api/meta"
	sourcev1 "github.com/windlass-dev/windlass/api/source/v1"
	"github.com/windlass-dev/windlass/internal/conditions"
	"github.com/windlass-dev/windlass/internal/gitserver"
	"github.com/windlass-dev/windlass/internal/testutil"
	"github.com/windlass-dev/windlass/internal/testutil/helmtest"
	"github.com/windlass-dev/windlass/internal/testutil/testenv"
)

// outageBulk is how many ConfigMaps the prune of the outage story deletes.
const outageBulk = 500

// Security row 37, the API server gone during a prune: a Kustomization
// prunes the objects a new revision dropped, and the API server stops
// after the first deletion and comes back. The controller rides the
// outage out, then prunes what is left: the object the revision kept is
// still there, the dropped ones are gone, and the inventory names the kept
// one alone.
func TestController_APIServerGoneDuringPruneConverges(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	cp, kc := privateControlPlane(t, g)
	ns := cp.CreateNamespace(t)
	// Requests at 100 a second: the prune takes five seconds, far longer
	// than stopping the API server.
	proc := startPrivateController(t, g, kc, "--kube-api-qps", "100", "--kube-api-burst", "100")

	srv := gitserver.NewForTest(t)
	base := srv.MustStartHTTP(t)
	repo := srv.MustInitRepo(t, "prune.git", "main")
	rev1 := repo.MustCommit(t, "main", map[string]string{
		"deploy/keep.yaml": configMapYAML(ns, "keep"),
		"deploy/bulk.yaml": configMapsYAML(ns, "bulk-", outageBulk),
	}, "keep and the bulk")
	src := createIn(g, cp, &sourcev1.GitRepository{}, gitRepositoryYAML(ns, "app", base+"/prune.git"))
	ks := createIn(g, cp, &kustomizev1.Kustomization{}, fmt.Sprintf(`
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: app, namespace: %s}
spec:
  interval: 10m
  retryInterval: 2s
  path: ./deploy
  prune: true
  sourceRef: {kind: GitRepository, name: app}
`, ns))
	start := time.Now()
	waitAppliedIn(g, cp.Client, client.ObjectKeyFromObject(ks), "main@sha1:"+rev1)
	t.Logf("applied %d ConfigMaps in %.1fs", outageBulk+1, time.Since(start).Seconds())

	var list corev1.ConfigMapList
	cs, err := kubernetes.NewForConfig(cp.Config)
	g.Expect(err).NotTo(HaveOccurred())
	w, err := cs.CoreV1().ConfigMaps(ns).Watch(ctx, metav1.ListOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	rev2 := repo.MustCommit(t, "main", map[string]string{"deploy/bulk.yaml": ""}, "drop the bulk")
	testutil.RequestReconcile(g, cp.Client, src, "prune")
	waitOn(t, w, proc, "a pruned ConfigMap", func(ev watch.Event) bool { return ev.Type == watch.Deleted })
	g.Expect(cp.StopAPIServer()).To(Succeed())
	stopped := time.Now()
	g.Consistently(proc.Exited, 3*time.Second, interval).Should(BeFalse(), proc.Output)
	g.Expect(cp.StartAPIServer()).To(Succeed())
	back := time.Now()
	t.Logf("the API server was gone for %.1fs", time.Since(stopped).Seconds())

	g.Expect(cp.Client.List(ctx, &list, client.InNamespace(ns))).To(Succeed())
	left := len(list.Items) - 2 // but keep and kube-root-ca.crt
	t.Logf("%d of the %d bulk ConfigMaps were left when the API server came back", left, outageBulk)
	g.Expect(left).To(BeNumerically(">", 0), "the API server stopped during the prune")
	got := waitAppliedIn(g, cp.Client, client.ObjectKeyFromObject(ks), "main@sha1:"+rev2)
	g.Expect(inventoryIDs(got)).To(ConsistOf(configMapIDs(ns, "keep")))
	g.Eventually(func(g Gomega) []string {
		g.Expect(cp.Client.List(ctx, &list, client.InNamespace(ns))).To(Succeed())
		var names []string
		for _, cm := range list.Items {
			if cm.Name != "kube-root-ca.crt" {
				names = append(names, cm.Name)
			}
		}
		return names
	}, timeout, interval).Should(ConsistOf("keep"))
	t.Logf("pruned the rest %.1fs after the API server came back", time.Since(back).Seconds())
	g.Expect(proc.Exited()).To(BeFalse(), "the controller exited")
}

// Security row 37, the API server gone during a Helm install: the install
// of a chart whose Deployment is not ready yet waits, Helm's record says
// pending-install, and the API server stops and comes back. Once the
// Deployment is ready (as a kubelet would make it), the HelmRelease is
// Ready with the release deployed: no record is left pending, and the
// controller never exited.
func TestHelm_APIServerGoneDuringInstallConverges(t *testing.T) {
	g := NewWithT(t)
	cp, kc := privateControlPlane(t, g)
	ns := cp.CreateNamespace(t)
	proc := startPrivateController(t, g, kc)
	hr := startPendingInstall(t, g, cp, ns, proc)
	g.Expect(cp.StopAPIServer()).To(Succeed())
	stopped := time.Now()
	g.Consistently(proc.Exited, 3*time.Second, interval).Should(BeFalse(), proc.Output)
	g.Expect(cp.StartAPIServer()).To(Succeed())
	back := time.Now()
	t.Logf("the API server was gone for %.1fs", back.Sub(stopped).Seconds())

	expectDeployedIn(t, g, cp, hr)
	t.Logf("deployed %.1fs after the API server came back", time.Since(back).Seconds())
	g.Expect(proc.Exited()).To(BeFalse(), "the controller exited")
	expectNoOperationInProgress(g, proc)
}

// Lease loss while the Helm SDK runs: the leader installs a chart that
// waits (pending-install) when the API server goes, and exits once it
// cannot renew its lease, leaving the install pending as a kill would. The
// next leader, once the API server is back, recovers the pending release
// (and says so in an event) and finishes the install.
func TestHelm_LeaseLostDuringInstallIsRecovered(t *testing.T) {
	g := NewWithT(t)
	cp, kc := privateControlPlane(t, g)
	ns := cp.CreateNamespace(t)
	flags := []string{"--enable-leader-election", "--leader-election-namespace", ns,
		"--leader-election-lease-duration", leaseDuration.String(),
		"--leader-election-renew-deadline", leaseRenewDeadline.String(),
		"--leader-election-retry-period", leaseRetryPeriod.String()}
	first := startPrivateController(t, g, kc, flags...)
	hr := startPendingInstall(t, g, cp, ns, first)
	g.Expect(cp.StopAPIServer()).To(Succeed())
	g.Eventually(first.Done(), leaseRenewDeadline+leaseRetryPeriod+leaseExitMargin, interval).Should(BeClosed(), first.Output)
	g.Expect(first.Output()).To(ContainSubstring("leader election lost"))
	g.Expect(cp.StartAPIServer()).To(Succeed())
	g.Expect(releaseRecordsIn(g, cp, ns)).To(Equal(map[string]string{"sh.helm.release.v1.app.v1": "pending-install"}),
		"the lost leader left the install pending")

	next := startPrivateController(t, g, kc, flags...)
	got := expectDeployedIn(t, g, cp, hr)
	g.Expect(testutil.EventMessages(g, cp.Client, got, helmv2.HelmReleaseKind)).
		To(ContainElement(ContainSubstring("was left pending by an interrupted action")))
	expectNoOperationInProgress(g, next)
}

// startPendingInstall creates in ns of cp a HelmRepository and the
// HelmRelease "app" of a chart whose Deployment never becomes ready by
// itself, to install with wait (a 10m timeout, three retries), and returns
// the HelmRelease once Helm's record says pending-install.
func startPendingInstall(t *testing.T, g *WithT, cp *testenv.Environment, ns string, proc *controller) *helmv2.HelmRelease {
	charts := helmtest.NewRepo(t)
	charts.Add(t, appChart(t, "1.0.0", "hello", helmtest.WithTemplate("web.yaml", neverReadyTemplate)))
	createIn(g, cp, &sourcev1.HelmRepository{}, fmt.Sprintf(`
apiVersion: source.toolkit.fluxcd.io/v1
kind: HelmRepository
metadata: {name: charts, namespace: %s}
spec: {interval: 10m, url: %q}
`, ns, charts.URL()))
	cs, err := kubernetes.NewForConfig(cp.Config)
	g.Expect(err).NotTo(HaveOccurred())
	w, err := cs.CoreV1().Secrets(ns).Watch(context.Background(), metav1.ListOptions{LabelSelector: "owner=helm,name=" + releaseName})
	g.Expect(err).NotTo(HaveOccurred())
	hr := createIn(g, cp, &helmv2.HelmRelease{}, fmt.Sprintf(`
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: %s, namespace: %s}
spec:
  interval: 10m
  timeout: 10m
  chart:
    spec: {chart: app, version: 1.0.0, sourceRef: {kind: HelmRepository, name: charts}}
  install: {remediation: {retries: 3}}
`, releaseName, ns))
	waitOn(t, w, proc, "pending-install release record", func(ev watch.Event) bool {
		s, ok := ev.Object.(*corev1.Secret)
		return ok && s.Labels["status"] == "pending-install"
	})
	return hr
}

// expectDeployedIn makes the Deployment of hr ready (as a kubelet would)
// until hr is Ready with its release deployed, checks that no release
// record is left pending, and returns hr as last read.
func expectDeployedIn(t *testing.T, g *WithT, cp *testenv.Environment, hr *helmv2.HelmRelease) *helmv2.HelmRelease {
	got := &helmv2.HelmRelease{}
	g.Eventually(func(g Gomega) {
		markDeploymentReady(g, cp.Client, client.ObjectKey{Namespace: hr.Namespace, Name: releaseName + "-web"})
		g.Expect(cp.Client.Get(context.Background(), client.ObjectKeyFromObject(hr), got)).To(Succeed())
		g.Expect(conditions.IsTrue(got, meta.ReadyCondition)).To(BeTrue(), conditions.Message(got, meta.ReadyCondition))
		g.Expect(got.Status.History).NotTo(BeEmpty())
		g.Expect(got.Status.History[0].Status).To(Equal("deployed"))
	}, timeout, interval).Should(Succeed())
	records := releaseRecordsIn(g, cp, hr.Namespace)
	t.Logf("release records: %v", records)
	g.Expect(records).NotTo(ContainElement(HavePrefix("pending")), "no record is left pending")
	g.Expect(records).To(ContainElement("deployed"))
	return got
}

// markDeploymentReady writes the status a kube-controller-manager and a
// kubelet would give the Deployment key once its one replica runs.
func markDeploymentReady(g Gomega, c client.Client, key client.ObjectKey) {
	d := &appsv1.Deployment{}
	g.Expect(c.Get(context.Background(), key, d)).To(Succeed())
	if d.Status.ObservedGeneration == d.Generation && d.Status.AvailableReplicas == 1 {
		return
	}
	status := fmt.Sprintf(`{"status":{"observedGeneration":%d,"replicas":1,"updatedReplicas":1,"readyReplicas":1,"availableReplicas":1,`+
		`"conditions":[{"type":"Available","status":"True","reason":"MinimumReplicasAvailable"},`+
		`{"type":"Progressing","status":"True","reason":"NewReplicaSetAvailable"}]}}`, d.Generation)
	g.Expect(c.Status().Patch(context.Background(), d, client.RawPatch(types.MergePatchType, []byte(status)))).To(Succeed())
}
