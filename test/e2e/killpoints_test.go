package e2e

import (
	"context"
	"crypto/rand"
	"fmt"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kustomizev1 "github.com/windlass-dev/windlass/api/kustomize/v1"
	"github.com/windlass-dev/windlass/api/meta"
	sourcev1 "github.com/windlass-dev/windlass/api/source/v1"
	"github.com/windlass-dev/windlass/internal/artifact"
	"github.com/windlass-dev/windlass/internal/testutil"
)

// killPointBulk is how many ConfigMaps (bulk-000, ...) the first revision
// of every row applies besides "keep": enough that a prune or a deletion of
// them, one request after another, is still running when the test sees its
// first deletion.
const killPointBulk = 60

// killPointNoise is the size of the incompressible file the new revision
// of the artifact row adds: archiving it takes long enough that the
// artifact's file is seen in storage before the run ends.
const killPointNoise = 4 << 20

// artifactPollInterval is how often the artifact row looks for a new file
// in storage.
const artifactPollInterval = 2 * time.Millisecond

// Security reference row 37: the controller killed mid-reconcile, at any
// point, recomputes from what it observes and converges. Each row of the
// matrix runs in a namespace of its own with a controller of its own (its
// own shard), SIGKILLs it at one point of a reconciliation, checks that the
// kill landed there (not after the work it meant to cut short), starts a
// new controller on the same storage path and shard, and checks that it
// converges:
//
//   - prune: a revision drops 60 of a Kustomization's 61 ConfigMaps; killed
//     at the first deletion. The rest are deleted, the inventory lists
//     exactly the one kept, Ready at the new revision.
//   - status patch: a revision replaces the 60 ConfigMaps with 60 others;
//     killed when the Kustomization's status first shows the new revision
//     as attempted (the write-ahead inventory patch, before the new objects
//     are written). The new objects are applied, the old ones pruned, the
//     inventory exact, Ready at the new revision.
//   - finalizer: the Kustomization is deleted; killed at the first deletion
//     of its ConfigMaps. The finalizer is removed once every ConfigMap is
//     gone.
//   - artifact write: a commit adds a large file; killed as soon as a new
//     file (the temporary file being written, or the artifact renamed into
//     place) shows in the GitRepository's storage folder, before the status
//     names the new artifact. The new artifact is stored with the digest
//     the status claims, and the Kustomization applies it.
func TestKillPoint(t *testing.T) {
	points := []struct {
		name string
		// kill makes the change that leads the controller to the point,
		// kills it there and checks that the kill landed in time.
		kill func(t *testing.T, g *WithT, sc *killScene)
		// converged checks what the restarted controller reaches.
		converged func(t *testing.T, g *WithT, sc *killScene)
	}{
		{"prune", killDuringPrune, convergedAfterPrune},
		{"status-patch", killAtStatusPatch, convergedAfterStatusPatch},
		{"finalizer", killDuringFinalizer, convergedAfterFinalizer},
		{"artifact-write", killDuringArtifactWrite, convergedAfterArtifactWrite},
	}
	for _, p := range points {
		t.Run(p.name, func(t *testing.T) {
			g := NewWithT(t)
			sc := newKillScene(t, g)
			start := time.Now()
			p.kill(t, g, sc)
			g.Expect(sc.proc.Exited()).To(BeTrue(), "the controller was killed")
			killed := time.Now()
			sc.proc = startShardController(t, g, sc.shard, sc.storage)
			p.converged(t, g, sc)
			t.Logf("killed %.2fs after the change, converged %.2fs after the kill",
				killed.Sub(start).Seconds(), time.Since(killed).Seconds())
		})
	}
}

// killScene is what a row of TestKillPoint runs against: a controller of
// its own, and a Kustomization that applied keep and the bulk from a
// GitRepository at rev1.
type killScene struct {
	*crashStory
	// rev2 is the revision (main@sha1:...) after the change.
	rev2 string
}

// newKillScene starts a controller for a new namespace and shard, and
// waits until a Kustomization with prune applied keep and the bulk.
func newKillScene(t *testing.T, g *WithT) *killScene {
	st := startCrashStory(t, g, "killpoint-", func(ns string) map[string]string {
		return map[string]string{
			"deploy/keep.yaml": configMapYAML(ns, "keep"),
			"deploy/bulk.yaml": configMapsYAML(ns, "bulk-", killPointBulk),
		}
	})
	got := &kustomizev1.Kustomization{}
	g.Expect(env.Client.Get(context.Background(), client.ObjectKeyFromObject(st.ks), got)).To(Succeed())
	g.Expect(inventoryIDs(got)).To(ConsistOf(configMapIDs(st.ns, append(numberedNames("bulk-", killPointBulk), "keep")...)))
	return &killScene{crashStory: st}
}

// kustomization reads the scene's Kustomization.
func (sc *killScene) kustomization(g *WithT) *kustomizev1.Kustomization {
	got := &kustomizev1.Kustomization{}
	g.Expect(env.Client.Get(context.Background(), client.ObjectKeyFromObject(sc.ks), got)).To(Succeed())
	return got
}

// killDuringPrune drops the bulk from the source and kills the controller
// at the first deletion of a bulk object.
func killDuringPrune(t *testing.T, g *WithT, sc *killScene) {
	sha, err := sc.repo.Remove("main", []string{"deploy/bulk.yaml"}, "drop the bulk")
	g.Expect(err).NotTo(HaveOccurred())
	sc.rev2 = "main@sha1:" + sha
	w := watchConfigMaps(g, sc.ns)
	testutil.RequestReconcile(g, env.Client, sc.src, "prune")
	killOn(t, w, sc.proc, "deletion of a bulk object", isBulkDeletion)

	left := bulkCount(g, sc.ns)
	t.Logf("killed with %d of %d bulk objects not yet deleted", left, killPointBulk)
	g.Expect(left).To(BeNumerically(">", 0), "the kill landed before the prune ended")
	got := sc.kustomization(g)
	g.Expect(got.Status.LastAppliedRevision).To(Equal(sc.rev1), "the run never finished")
	g.Expect(inventoryIDs(got)).To(HaveLen(killPointBulk+1), "the bulk is still in the inventory")
}

func convergedAfterPrune(_ *testing.T, g *WithT, sc *killScene) {
	got := waitApplied(g, client.ObjectKeyFromObject(sc.ks), sc.rev2)
	g.Expect(inventoryIDs(got)).To(ConsistOf(configMapIDs(sc.ns, "keep")))
	g.Consistently(func() []string { return configMapNames(g, sc.ns) }, time.Second, interval).
		Should(ConsistOf("keep"), "the bulk is pruned, keep stays")
}

// killAtStatusPatch replaces the bulk with as many other objects and kills
// the controller when the Kustomization's status first shows the new
// revision: the patch that records the new objects in the inventory
// before they are written.
func killAtStatusPatch(t *testing.T, g *WithT, sc *killScene) {
	sc.rev2 = "main@sha1:" + sc.repo.MustCommit(t, "main", map[string]string{
		"deploy/bulk.yaml": configMapsYAML(sc.ns, "next-", killPointBulk),
	}, "replace the bulk")
	wc, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Scheme})
	g.Expect(err).NotTo(HaveOccurred())
	w, err := wc.Watch(context.Background(), &kustomizev1.KustomizationList{}, client.InNamespace(sc.ns))
	g.Expect(err).NotTo(HaveOccurred())
	testutil.RequestReconcile(g, env.Client, sc.src, "status")
	ev := killOn(t, w, sc.proc, "status patch with the new revision", func(ev watch.Event) bool {
		k, ok := ev.Object.(*kustomizev1.Kustomization)
		return ok && ev.Type == watch.Modified && k.Status.LastAttemptedRevision == sc.rev2
	})
	seen := ev.Object.(*kustomizev1.Kustomization)

	cms := configMapNames(g, sc.ns)
	t.Logf("killed at a status patch with %d inventory entries; %d of the new objects were written, %d old ones pruned",
		len(inventoryIDs(seen)), countPrefix(cms, "next-"), killPointBulk-countPrefix(cms, "bulk-"))
	got := sc.kustomization(g)
	g.Expect(got.Status.LastAppliedRevision).To(Equal(sc.rev1), "the run never finished")
	g.Expect(inventoryIDs(got)).To(ContainElements(configMapIDs(sc.ns, numberedNames("next-", killPointBulk)...)),
		"the kill followed the write-ahead inventory patch")
}

func convergedAfterStatusPatch(_ *testing.T, g *WithT, sc *killScene) {
	got := waitApplied(g, client.ObjectKeyFromObject(sc.ks), sc.rev2)
	want := append(numberedNames("next-", killPointBulk), "keep")
	g.Expect(inventoryIDs(got)).To(ConsistOf(configMapIDs(sc.ns, want...)))
	g.Expect(configMapNames(g, sc.ns)).To(ConsistOf(want))
}

// killDuringFinalizer deletes the Kustomization and kills the controller
// at the first deletion of a bulk object.
func killDuringFinalizer(t *testing.T, g *WithT, sc *killScene) {
	w := watchConfigMaps(g, sc.ns)
	g.Expect(env.Client.Delete(context.Background(), sc.ks)).To(Succeed())
	killOn(t, w, sc.proc, "deletion of a bulk object", isBulkDeletion)

	left := bulkCount(g, sc.ns)
	t.Logf("killed with %d of %d bulk objects not yet deleted", left, killPointBulk)
	g.Expect(left).To(BeNumerically(">", 0), "the kill landed before the deletion ended")
	got := sc.kustomization(g)
	g.Expect(got.DeletionTimestamp).NotTo(BeNil())
	g.Expect(got.Finalizers).To(ContainElement(meta.Finalizer), "the finalizer is still there")
}

func convergedAfterFinalizer(_ *testing.T, g *WithT, sc *killScene) {
	g.Eventually(func() bool {
		return apierrors.IsNotFound(env.Client.Get(context.Background(), client.ObjectKeyFromObject(sc.ks), &kustomizev1.Kustomization{}))
	}, timeout, interval).Should(BeTrue(), "the finalizer is removed")
	g.Consistently(func() []string { return configMapNames(g, sc.ns) }, time.Second, interval).
		Should(BeEmpty(), "every object of the Kustomization is deleted")
}

// killDuringArtifactWrite commits a revision with a large file and kills
// the controller as soon as a new file shows in the GitRepository's
// storage folder.
//
// The artifact is written to a temporary file (.tmp-*) that is renamed to
// <commit>.tar.gz once synced, and only then does the run patch the status.
// Polling the folder every few milliseconds while megabytes of random data
// are compressed sees the temporary file, so the kill usually lands
// mid-write; on a loaded machine it may land just after the rename. Both
// are before the status patch, which is what the row requires and
// asserts; which case occurred is logged.
func killDuringArtifactWrite(t *testing.T, g *WithT, sc *killScene) {
	noise := make([]byte, killPointNoise)
	_, _ = rand.Read(noise)
	sha := sc.repo.MustCommit(t, "main", map[string]string{
		"deploy/after.yaml": configMapYAML(sc.ns, "after"),
		"noise/random.bin":  string(noise),
	}, "add a ConfigMap and noise")
	sc.rev2 = "main@sha1:" + sha
	dir := sc.artifactDir()
	before := dirNames(g, dir)
	g.Expect(before).To(HaveLen(1), "the artifact of rev1")

	seen := make(chan []string, 1)
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		tick := time.NewTicker(artifactPollInterval)
		defer tick.Stop()
		for {
			if entries, _ := os.ReadDir(dir); len(entries) > len(before) {
				sc.proc.Kill()
				var got []string
				for _, e := range entries {
					got = append(got, e.Name())
				}
				seen <- got
				return
			}
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	}()
	testutil.RequestReconcile(g, env.Client, sc.src, "artifact")
	var saw []string
	select {
	case saw = <-seen:
	case <-time.After(timeout):
		t.Fatalf("no new file in %s; controller output:\n%s", dir, sc.proc.Output())
	}

	after := dirNames(g, dir)
	final := slices.Contains(after, sha+".tar.gz")
	t.Logf("killed on seeing %v; on disk after the kill: %v (mid-write: %t, renamed into place: %t)",
		saw, after, !final, final)
	src := &sourcev1.GitRepository{}
	g.Expect(env.Client.Get(context.Background(), client.ObjectKeyFromObject(sc.src), src)).To(Succeed())
	g.Expect(src.Status.Artifact).NotTo(BeNil())
	g.Expect(src.Status.Artifact.Revision).To(Equal(sc.rev1), "the kill landed before the status named the new artifact")
	g.Expect(sc.kustomization(g).Status.LastAppliedRevision).To(Equal(sc.rev1))
}

func convergedAfterArtifactWrite(t *testing.T, g *WithT, sc *killScene) {
	src := waitReady(g, client.ObjectKeyFromObject(sc.src), sc.rev2)
	a := src.Status.Artifact
	g.Expect(a.URL).To(HavePrefix("http://"+sc.proc.StorageAddr+"/"), "served by the new controller")
	body := testutil.Download(g, httpClient, a)
	g.Expect(len(body)).To(BeNumerically(">", killPointNoise), "the artifact holds the noise")
	f, err := os.Open(filepath.Join(sc.storage, "artifacts", filepath.FromSlash(a.Path)))
	g.Expect(err).NotTo(HaveOccurred())
	defer f.Close()
	g.Expect(artifact.Digest(f)).To(Equal(a.Digest), "the file in storage has the digest of the status")
	// A file the killed run left half-written stays until it is old enough
	// for the garbage collection of a later artifact; it is never served.
	left := dirNames(g, sc.artifactDir())
	t.Logf("storage folder after convergence: %v", left)
	for _, name := range left {
		if strings.HasPrefix(name, ".tmp-") {
			resp, err := httpClient.Get("http://" + sc.proc.StorageAddr + "/" + path.Dir(a.Path) + "/" + name)
			g.Expect(err).NotTo(HaveOccurred())
			resp.Body.Close()
			g.Expect(resp.StatusCode).NotTo(Equal(http.StatusOK), "a temporary file is not served")
		}
	}

	got := waitApplied(g, client.ObjectKeyFromObject(sc.ks), sc.rev2)
	want := append(numberedNames("bulk-", killPointBulk), "keep", "after")
	g.Expect(inventoryIDs(got)).To(ConsistOf(configMapIDs(sc.ns, want...)))
	g.Expect(configMapNames(g, sc.ns)).To(ConsistOf(want))
}

// artifactDir is the storage folder of the scene's GitRepository.
func (sc *killScene) artifactDir() string {
	return filepath.Join(sc.storage, "artifacts", "gitrepository", sc.ns, sc.src.Name)
}

// killOn kills proc at the first event of w that match accepts, and
// returns that event; it fails t when none comes within timeout.
func killOn(t *testing.T, w watch.Interface, proc *controller, what string, match func(watch.Event) bool) watch.Event {
	t.Helper()
	ev := waitOn(t, w, proc, what, match)
	proc.Kill()
	return ev
}

// waitOn returns the first event of w that match passes, and stops w; the
// test fails if none comes in time (with proc's output) or w ends first.
func waitOn(t *testing.T, w watch.Interface, proc *controller, what string, match func(watch.Event) bool) watch.Event {
	t.Helper()
	defer w.Stop()
	deadline := time.After(timeout)
	for {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok || ev.Type == watch.Error {
				t.Fatalf("the watch ended before the %s: %v", what, ev.Object)
			}
			if match(ev) {
				return ev
			}
		case <-deadline:
			t.Fatalf("no %s within %s; controller output:\n%s", what, timeout, proc.Output())
		}
	}
}

// isBulkDeletion tells whether ev deletes (or starts deleting) a
// ConfigMap of the bulk.
func isBulkDeletion(ev watch.Event) bool {
	cm, ok := ev.Object.(*corev1.ConfigMap)
	if !ok || !strings.HasPrefix(cm.Name, "bulk-") {
		return false
	}
	return ev.Type == watch.Deleted || (ev.Type == watch.Modified && cm.DeletionTimestamp != nil)
}

// watchConfigMaps watches the ConfigMaps of ns.
func watchConfigMaps(g *WithT, ns string) watch.Interface {
	cs, err := kubernetes.NewForConfig(env.Config)
	g.Expect(err).NotTo(HaveOccurred())
	w, err := cs.CoreV1().ConfigMaps(ns).Watch(context.Background(), metav1.ListOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	return w
}

// configMapsYAML is a multi-document manifest of n ConfigMaps named
// prefix000, prefix001, ...
func configMapsYAML(ns, prefix string, n int) string {
	var b strings.Builder
	for _, name := range numberedNames(prefix, n) {
		b.WriteString("---\n" + configMapYAML(ns, name))
	}
	return b.String()
}

// numberedNames returns prefix000, prefix001, ... (n names).
func numberedNames(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s%03d", prefix, i)
	}
	return out
}

// configMapIDs returns the inventory IDs of the ConfigMaps of ns named.
func configMapIDs(ns string, names ...string) []string {
	ids := make([]string, len(names))
	for i, n := range names {
		ids[i] = ns + "_" + n + "__ConfigMap"
	}
	return ids
}

// inventoryIDs returns the IDs of the status inventory of k.
func inventoryIDs(k *kustomizev1.Kustomization) []string {
	if k.Status.Inventory == nil {
		return nil
	}
	ids := make([]string, 0, len(k.Status.Inventory.Entries))
	for _, e := range k.Status.Inventory.Entries {
		ids = append(ids, e.ID)
	}
	return ids
}

// configMapNames returns the names of the ConfigMaps of ns, but for the
// cluster's root CA that the control plane may publish there.
func configMapNames(g Gomega, ns string) []string {
	var list corev1.ConfigMapList
	g.Expect(env.Client.List(context.Background(), &list, client.InNamespace(ns))).To(Succeed())
	out := []string{}
	for _, cm := range list.Items {
		if cm.Name != "kube-root-ca.crt" {
			out = append(out, cm.Name)
		}
	}
	return out
}

// countPrefix counts the names that start with prefix.
func countPrefix(names []string, prefix string) int {
	n := 0
	for _, name := range names {
		if strings.HasPrefix(name, prefix) {
			n++
		}
	}
	return n
}

// dirNames lists the names in dir.
func dirNames(g *WithT, dir string) []string {
	entries, err := os.ReadDir(dir)
	g.Expect(err).NotTo(HaveOccurred())
	out := make([]string, 0, len(entries))
	for _, e := range entries {
		out = append(out, e.Name())
	}
	return out
}
