package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kustomizev1 "github.com/windlass-dev/windlass/api/kustomize/v1"
	sourcev1 "github.com/windlass-dev/windlass/api/source/v1"
	"github.com/windlass-dev/windlass/internal/gitserver"
	"github.com/windlass-dev/windlass/internal/testutil"
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
