package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	kustomizev1 "github.com/windlass-dev/windlass/api/kustomize/v1"
	"github.com/windlass-dev/windlass/api/meta"
	sourcev1 "github.com/windlass-dev/windlass/api/source/v1"
	"github.com/windlass-dev/windlass/internal/conditions"
	"github.com/windlass-dev/windlass/internal/gitserver"
	"github.com/windlass-dev/windlass/internal/testutil"
)

// bulkObjects is how many ConfigMaps the revision that is cut short adds:
// enough that the apply is still running when the first one shows.
const bulkObjects = 300

// The controller is killed (SIGKILL, as the OOM killer does) while it
// applies a revision that adds many objects; before it comes back, the
// revision is reverted. The restarted controller converges on the new
// revision and prunes every object the killed run had created: the objects
// joined the inventory before they were written, so none is orphaned.
func TestKustomization_KilledMidApplyConverges(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	st := startCrashStory(t, g, "crash-", oneObject)
	ns, repo, ks := st.ns, st.repo, st.ks

	// Revision 2 adds the bulk; the controller dies at its first write.
	st.addBulk(t, g, st.proc.Kill)

	created := bulkCount(g, ns)
	t.Logf("the killed run created %d of %d objects", created, bulkObjects)
	got := &kustomizev1.Kustomization{}
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(ks), got)).To(Succeed())
	g.Expect(got.Status.Inventory.Entries).To(HaveLen(bulkObjects+1),
		"every object of the stage joined the inventory before the first was written")

	// Revision 3 drops the bulk and adds another object; then the
	// controller comes back.
	repo.MustCommit(t, "main", map[string]string{"deploy/new.yaml": configMapYAML(ns, "new")}, "add new")
	rev3, err := repo.Remove("main", []string{"deploy/bulk.yaml"}, "drop the bulk")
	g.Expect(err).NotTo(HaveOccurred())
	testutil.RequestReconcile(g, env.Client, st.src, "rev3")
	startShardController(t, g, st.shard, st.storage)

	got = waitApplied(g, client.ObjectKeyFromObject(ks), "main@sha1:"+rev3)
	g.Expect(bulkCount(g, ns)).To(BeZero(), "the objects of the killed run are pruned")
	var ids []string
	for _, e := range got.Status.Inventory.Entries {
		ids = append(ids, e.ID)
	}
	g.Expect(ids).To(ConsistOf(ns+"_keep__ConfigMap", ns+"_new__ConfigMap"))
}

// Row 39: SIGTERM while the controller applies a revision of many objects
// (a pod deleted mid-apply): the binary exits with status 0 within the
// shutdown grace, and the next replica applies the revision whole.
func TestKustomization_TerminatedMidApplyExitsAndConverges(t *testing.T) {
	g := NewWithT(t)
	st := startCrashStory(t, g, "crash-", oneObject)
	var terminated error
	var took time.Duration
	rev2 := st.addBulk(t, g, func() {
		start := time.Now()
		terminated = st.proc.Terminate(shutdownGrace)
		took = time.Since(start)
	})
	g.Expect(terminated).NotTo(HaveOccurred(), st.proc.Output)
	t.Logf("exited %.2fs after SIGTERM, %d of %d objects created", took.Seconds(), bulkCount(g, st.ns), bulkObjects)

	startShardController(t, g, st.shard, st.storage)
	got := waitApplied(g, client.ObjectKeyFromObject(st.ks), "main@sha1:"+rev2)
	g.Expect(bulkCount(g, st.ns)).To(Equal(bulkObjects))
	g.Expect(got.Status.Inventory.Entries).To(HaveLen(bulkObjects + 1))
}

// crashStory is a sharded controller of its own, and a Kustomization with
// prune that it applied at revision 1.
type crashStory struct {
	ns, shard, storage string
	proc               *controller
	repo               *gitserver.Repo
	src                *sourcev1.GitRepository
	ks                 *kustomizev1.Kustomization
	// rev1 is revision 1, as main@sha1:<hex>.
	rev1 string
}

// A controller started again, with nothing changed, takes the last apply
// of a Kustomization from its status.verified: the new process's first run
// of it leaves it Ready having sent no dry run, read none of its objects
// and written no status, by the new process's own metrics.
func TestKustomization_RestartedControllerTakesTheLastApplyFromTheStatus(t *testing.T) {
	g := NewWithT(t)
	st := startCrashStory(t, g, "restart-", oneObject)
	key := client.ObjectKeyFromObject(st.ks)
	g.Eventually(func(g Gomega) {
		got := &kustomizev1.Kustomization{}
		g.Expect(env.Client.Get(context.Background(), key, got)).To(Succeed())
		g.Expect(got.Status.Verified).NotTo(BeNil())
	}, timeout, interval).Should(Succeed())

	st.proc.Kill()
	restarted := map[string]*controller{"restarted": startShardController(t, g, st.shard, st.storage)}
	g.Eventually(func(g Gomega) {
		g.Expect(succeededOn(g, restarted)).To(HaveKey("Kustomization/" + st.ns + "/app"))
	}, timeout, interval).Should(Succeed())
	g.Expect(apiRequestsOf(g, restarted, `dry_run="true"`)).To(BeZero(), "no dry run")
	g.Expect(apiRequestsOf(g, restarted, `verb="get"`, `resource="configmaps"`)).To(BeZero(), "no read of the applied ConfigMap")
	g.Expect(apiRequestsOf(g, restarted, `resource="kustomizations/status"`)).To(BeZero(),
		"nor wrote its status: the run repeated the history's newest snapshot")
	g.Expect(apiRequestsOf(g, restarted, `resource="discovery"`)).To(BeNumerically(">", 0),
		"the metrics count the requests: the process's discovery")
	waitApplied(g, key, st.rev1)
}

// startCrashStory starts a controller for a new namespace and the shard
// prefix+namespace, and waits until a Kustomization with prune applied
// files (given the namespace) as revision 1.
func startCrashStory(t *testing.T, g *WithT, prefix string, files func(ns string) map[string]string) *crashStory {
	st := &crashStory{ns: env.CreateNamespace(t), storage: t.TempDir()}
	st.shard = prefix + st.ns
	st.proc = startShardController(t, g, st.shard, st.storage)
	srv := gitserver.NewForTest(t)
	base := srv.MustStartHTTP(t)
	st.repo = srv.MustInitRepo(t, "app.git", "main")
	st.rev1 = "main@sha1:" + st.repo.MustCommit(t, "main", files(st.ns), "revision 1")
	st.src = createSharded(g, st.shard, &sourcev1.GitRepository{}, gitRepositoryYAML(st.ns, "app", base+"/app.git"))
	st.ks = createSharded(g, st.shard, &kustomizev1.Kustomization{}, fmt.Sprintf(`
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: app, namespace: %s}
spec:
  interval: 10m
  retryInterval: 1s
  path: ./deploy
  prune: true
  sourceRef: {kind: GitRepository, name: app}
`, st.ns))
	waitApplied(g, client.ObjectKeyFromObject(st.ks), st.rev1)
	return st
}

// oneObject is a revision 1 of one ConfigMap, keep.
func oneObject(ns string) map[string]string {
	return map[string]string{"deploy/keep.yaml": configMapYAML(ns, "keep")}
}

// addBulk commits revision 2, which adds bulkObjects ConfigMaps, requests
// its reconciliation, calls stop as soon as the first of them is created,
// and returns the revision.
func (st *crashStory) addBulk(t *testing.T, g *WithT, stop func()) string {
	var bulk strings.Builder
	for i := range bulkObjects {
		bulk.WriteString("---\n" + configMapYAML(st.ns, fmt.Sprintf("bulk-%03d", i)))
	}
	rev := st.repo.MustCommit(t, "main", map[string]string{"deploy/bulk.yaml": bulk.String()}, "add the bulk")
	cs, err := kubernetes.NewForConfig(env.Config)
	g.Expect(err).NotTo(HaveOccurred())
	w, err := cs.CoreV1().ConfigMaps(st.ns).Watch(context.Background(), metav1.ListOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	testutil.RequestReconcile(g, env.Client, st.src, "rev2")
	atFirstBulkObject(t, w, st.proc, stop)
	return rev
}

// startShardController starts a controller of its own, with extra flags,
// for the objects labelled with shard, stopped (killed) when t ends.
func startShardController(t *testing.T, g *WithT, shard, storage string, extra ...string) *controller {
	proc, err := startController(kubeconfig, filepath.Join(storage, "artifacts"), shardLabel+"="+shard, extra...)
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(proc.Kill)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("windlass controller (%s) output:\n%s", shard, proc.Output())
		}
	})
	g.Expect(proc.waitReady(timeout)).To(Succeed())
	return proc
}

// createSharded creates the object manifest declares, labelled for shard.
func createSharded[T client.Object](g *WithT, shard string, obj T, manifest string) T {
	g.Expect(yaml.UnmarshalStrict([]byte(manifest), obj)).To(Succeed(), manifest)
	obj.SetLabels(map[string]string{shardLabel: shard})
	g.Expect(env.Client.Create(context.Background(), obj)).To(Succeed())
	return obj
}

// atFirstBulkObject calls stop as soon as w reports the first object of
// the bulk.
func atFirstBulkObject(t *testing.T, w watch.Interface, proc *controller, stop func()) {
	defer w.Stop()
	deadline := time.After(timeout)
	for {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				t.Fatalf("the watch ended; controller output:\n%s", proc.Output())
			}
			if cm, isCM := ev.Object.(*corev1.ConfigMap); isCM && ev.Type == watch.Added && strings.HasPrefix(cm.Name, "bulk-") {
				stop()
				return
			}
		case <-deadline:
			t.Fatalf("no object of the bulk was created; controller output:\n%s", proc.Output())
		}
	}
}

// waitApplied waits until the Kustomization is Ready with revision applied.
func waitApplied(g *WithT, key client.ObjectKey, revision string) *kustomizev1.Kustomization {
	return waitAppliedIn(g, env.Client, key, revision)
}

// waitAppliedIn is waitApplied in the cluster of c.
func waitAppliedIn(g *WithT, c client.Client, key client.ObjectKey, revision string) *kustomizev1.Kustomization {
	got := &kustomizev1.Kustomization{}
	g.Eventually(func(g Gomega) {
		g.Expect(c.Get(context.Background(), key, got)).To(Succeed())
		g.Expect(conditions.IsTrue(got, meta.ReadyCondition)).To(BeTrue(), conditions.Message(got, meta.ReadyCondition))
		g.Expect(got.Status.LastAppliedRevision).To(Equal(revision))
	}, timeout, interval).Should(Succeed(), "Kustomization %s applied %s", key, revision)
	return got
}

// bulkCount counts the ConfigMaps of the bulk in ns.
func bulkCount(g *WithT, ns string) int {
	var list corev1.ConfigMapList
	g.Expect(env.Client.List(context.Background(), &list, client.InNamespace(ns))).To(Succeed())
	n := 0
	for _, cm := range list.Items {
		if strings.HasPrefix(cm.Name, "bulk-") {
			n++
		}
	}
	return n
}

func configMapYAML(ns, name string) string {
	return "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: " + name + "\n  namespace: " + ns + "\ndata:\n  k: v\n"
}
