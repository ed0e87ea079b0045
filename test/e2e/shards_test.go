package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	imagev1 "github.com/windlass-dev/windlass/api/image/v1"
	kustomizev1 "github.com/windlass-dev/windlass/api/kustomize/v1"
	"github.com/windlass-dev/windlass/api/meta"
	notificationv1 "github.com/windlass-dev/windlass/api/notification/v1"
	sourcev1 "github.com/windlass-dev/windlass/api/source/v1"
	"github.com/windlass-dev/windlass/internal/conditions"
	"github.com/windlass-dev/windlass/internal/gitserver"
	"github.com/windlass-dev/windlass/internal/scheme"
	"github.com/windlass-dev/windlass/internal/shard"
	"github.com/windlass-dev/windlass/internal/testutil"
	"github.com/windlass-dev/windlass/internal/testutil/childproc"
	"github.com/windlass-dev/windlass/internal/testutil/testenv"
)

// The size of the sharding story: namespaces, each with a GitRepository
// and its Kustomizations.
const (
	shardNamespaces     = 30
	shardKustomizations = 10
	// shardLeaseDuration is the controller's default: with a shorter
	// one, a replica whose renewals a loaded machine delays for two thirds
	// of it gives its Lease up and exits, as it should, and the story,
	// which starts no replica again, fails (it did with 6s under two test
	// runs side by side).
	shardLeaseDuration    = 15 * time.Second
	shardRuntimeNamespace = "windlass-system"
	// shardRing is the ring of replicas that run every controller: its
	// members' Leases and its buckets' carry it in shard.RingLabel.
	shardRing = "windlass"
)

// Three replicas started with --shards=auto --shard-by=object share the
// objects' buckets: each bucket's Lease names the replica that holds it,
// each replica holds an equal share of the buckets, and each object is held
// by exactly one replica, the one its bucket's Lease names and whose own
// metrics say it reconciled it; a Kustomization whose GitRepository or
// dependency another replica holds reads them across (the artifact over
// HTTP). A replica killed with SIGKILL loses its buckets to the others,
// which claim every one of them and reconcile every object of them,
// fetching no source again (the remote has not moved: a source's artifact
// is stored again once something downloads it);
// started again, it is handed its share back, and again each object is
// reconciled by one replica only. All along, the API server refuses a
// status written by a replica that the Lease of the object's bucket does
// not name, and the test checks that no replica was refused but for the
// API server's own lag (see expectNoStatusOfOthers). The web UI of one
// replica lists every Kustomization and names the replica that holds each.
// A Gate that one replica reconciles holds back Kustomizations that each
// replica holds, until it opens. The API server's audit log shows every
// apply of the Kustomizations' ConfigMaps sent by the replica that held
// the Kustomization then, and by no other.
func TestShards_ShareFailoverAndRejoin(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	audit, auditLog := auditApplies(t, g, []string{"r0", "r1", "r2"})
	cp, _ := privateControlPlane(t, g, audit...)
	g.Expect(cp.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: shardRuntimeNamespace}})).To(Succeed())
	kubeconfigs := map[string]string{}
	for _, name := range []string{"r0", "r1", "r2"} {
		kc, err := cp.KubeconfigFileOf(t.TempDir(), name)
		g.Expect(err).NotTo(HaveOccurred())
		kubeconfigs[name] = kc
	}
	denyStatusOfOthers(t, g, cp, kubeconfigs)
	history := recordBucketHolders(t, g, cp)
	gitSrv := gitserver.NewForTest(t)
	url := gitSrv.MustStartHTTP(t) + "/shards"
	sha := gitSrv.MustInitRepo(t, "shards", "main").MustCommit(t, "main", map[string]string{
		"app/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm-${app}\ndata:\n  app: ${app}\n",
	}, "initial commit")

	uiAddrs, err := childproc.FreeAddrs(1)
	g.Expect(err).NotTo(HaveOccurred())
	replicas := map[string]*controller{"r0": startReplica(t, g, kubeconfigs["r0"], "r0", "--ui-addr", uiAddrs[0])}
	for _, name := range []string{"r1", "r2"} {
		replicas[name] = startReplica(t, g, kubeconfigs[name], name)
	}
	objects := createShardedApps(g, cp, url)
	waitAllApplied(g, cp, "main@sha1:"+sha, replicas)
	expectSharedArtifactURLs(g, cp)
	expectBucketShares(g, cp, replicas)
	// The replicas that started first handed buckets over to the others:
	// each forgets the objects it handed over once it sees them go.
	var holders map[string]string
	g.Eventually(func(g Gomega) { holders = expectHeldOnce(g, cp, replicas, objects) }, timeout, interval).Should(Succeed())
	t.Logf("shares: %v", shareSizes(holders))
	for name, proc := range replicas {
		g.Expect(shareSizes(holders)).To(HaveKeyWithValue(name, BeNumerically(">", 0)), "every replica holds a share")
		g.Expect(scrape(g, "http://"+proc.MetricsAddr+"/metrics")).To(ContainSubstring("\nwindlass_shard_members 3\n"),
			"%s sees three members", name)
	}

	killed := replicas["r1"]
	survivors := map[string]*controller{"r0": replicas["r0"], "r2": replicas["r2"]}
	survivorsDryRuns := apiRequestsOf(g, survivors, `dry_run="true"`)
	survivorsClaimed := bucketMovesOf(g, survivors, "claimed")
	orphanBuckets := bucketShareSizes(bucketHolders(g, cp))["r1"]
	sourcesBefore := gitRepositoryVersions(g, cp)
	fetchesBefore := gitSrv.FetchesOf("shards")
	killed.Kill()
	killedAt := time.Now()
	delete(replicas, "r1")
	var orphans []string
	for obj, holder := range holders {
		if holder == "r1" {
			orphans = append(orphans, obj)
		}
	}
	g.Eventually(func(g Gomega) {
		reconciled := reconciledBy(g, replicas)
		for _, obj := range orphans {
			g.Expect(reconciled[obj]).To(HaveLen(1), "%s is reconciled by a live replica", obj)
		}
	}, 2*time.Minute, interval).Should(Succeed())
	t.Logf("the %d objects of the killed replica were reconciled by the others %.1fs after the kill (lease %s)",
		len(orphans), time.Since(killedAt).Seconds(), shardLeaseDuration)
	g.Eventually(func(g Gomega) {
		succeeded := succeededOn(g, replicas)
		for _, obj := range orphans {
			g.Expect(succeeded).To(HaveKey(obj), "a live replica's run of %s succeeded", obj)
		}
	}, 2*time.Minute, interval).Should(Succeed())
	g.Expect(apiRequestsOf(g, replicas, `dry_run="true"`)).To(Equal(survivorsDryRuns),
		"the survivors took the Kustomizations over without a dry run: their status.verified said nothing changed")
	g.Expect(gitRepositoryVersions(g, cp)).To(Equal(sourcesBefore),
		"the survivors kept the GitRepositories' artifacts under the same URLs: no source's status was written")
	g.Expect(gitSrv.FetchesOf("shards")).To(Equal(fetchesBefore),
		"the survivors fetched no GitRepository again: the remote had not moved, and no Kustomization needed an artifact")
	expectBucketShares(g, cp, replicas)
	g.Eventually(func(g Gomega) int { return bucketMovesOf(g, survivors, "claimed") - survivorsClaimed }, timeout, interval).
		Should(Equal(orphanBuckets), "the survivors claimed each of the killed replica's %d buckets once, and no other", orphanBuckets)
	// The ring of two may move buckets between the survivors too (each
	// holds half): those are handed over.
	g.Eventually(func(g Gomega) { expectHeldOnce(g, cp, replicas, objects) }, timeout, interval).Should(Succeed())

	survivorsHandedOver := bucketMovesOf(g, survivors, "handed_over")
	replicas["r1"] = startReplica(t, g, kubeconfigs["r1"], "r1")
	g.Eventually(func(g Gomega) {
		held := expectHeldOnce(g, cp, replicas, objects)
		g.Expect(shareSizes(held)).To(HaveKeyWithValue("r1", BeNumerically(">", 0)), "the replica that came back takes a share")
	}, 2*time.Minute, interval).Should(Succeed())
	expectBucketShares(g, cp, replicas)
	rejoined := bucketShareSizes(bucketHolders(g, cp))["r1"]
	g.Expect(bucketMovesOf(g, map[string]*controller{"r1": replicas["r1"]}, "claimed")).To(BeZero(),
		"the replica that came back claimed no bucket: the live holders handed its share over")
	g.Eventually(func(g Gomega) int { return bucketMovesOf(g, survivors, "handed_over") - survivorsHandedOver }, timeout, interval).
		Should(BeNumerically(">=", rejoined), "the others handed over the %d buckets the replica that came back holds", rejoined)
	waitAllApplied(g, cp, "main@sha1:"+sha, replicas)
	expectArtifactsFromEveryReplica(g, cp, replicas)
	expectArtifactsOnlyAtHolders(g, cp, replicas)
	expectTagsFromEveryReplica(t, g, cp, replicas)
	expectWebhookReachesEveryHolder(g, cp, replicas)
	expectOverviewNamesEveryHolder(g, cp, uiAddrs[0])
	waitAllApplied(g, cp, "main@sha1:"+sha, replicas) // nothing failed on an artifact removed after a handover
	cliKubeconfig, err := cp.KubeconfigFile(t.TempDir())
	g.Expect(err).NotTo(HaveOccurred())
	expectGateHoldsEveryHolder(g, cp, cliKubeconfig, url, "main@sha1:"+sha, replicas)
	outputs := map[string][]string{"r1": {killed.Output()}}
	for name, proc := range replicas {
		outputs[name] = append(outputs[name], proc.Output())
	}
	expectNoStatusOfOthers(t, g, cp, history, outputs)
	expectAppliedOnlyByHolders(t, g, auditLog, history)
}

// expectArtifactsOnlyAtHolders checks that the artifacts of every
// GitRepository are in the storage of the replica that holds it and of no
// other live one: a replica that handed a source over removed them once
// the new holder published its own. A holder that took a source over
// stores its artifact once asked for it: call it after the downloads of
// expectArtifactsFromEveryReplica.
func expectArtifactsOnlyAtHolders(g *WithT, cp *testenv.Environment, replicas map[string]*controller) {
	g.Eventually(func(g Gomega) {
		for obj, holder := range holdersByLease(g, cp) {
			rel, ok := strings.CutPrefix(obj, "GitRepository/")
			if !ok {
				continue
			}
			for name, proc := range replicas {
				_, err := os.Stat(filepath.Join(proc.StoragePath, "gitrepository", rel))
				g.Expect(err == nil).To(Equal(name == holder), "%s has the artifacts of %s, held by %s", name, obj, holder)
			}
		}
	}, timeout, interval).Should(Succeed())
}

// overviewShard matches a Kustomization's row of the UI's objects table
// (the tables above it have no Shard column):
// its namespace/name and the replica the Shard column names.
var overviewShard = regexp.MustCompile(`Kustomization ([^<]+)</a></td>(?s:.*?)<td class="shard">([^<]+)</td>`)

// expectOverviewNamesEveryHolder checks that the overview of the replica
// serving the UI at addr lists every Kustomization, those the others hold
// too, each with the replica its bucket's Lease names.
func expectOverviewNamesEveryHolder(g *WithT, cp *testenv.Environment, addr string) {
	want := map[string]string{}
	for obj, holder := range holdersByLease(g, cp) {
		if name, ok := strings.CutPrefix(obj, "Kustomization/"); ok {
			want[name] = holder
		}
	}
	g.Expect(shareSizes(want)).To(HaveLen(3), "the three replicas hold Kustomizations")
	g.Eventually(func(g Gomega) map[string]string {
		_, objects, _ := strings.Cut(scrape(g, "http://"+addr+"/?kind=Kustomization"), `<table id="objects">`)
		shown := map[string]string{}
		for _, m := range overviewShard.FindAllStringSubmatch(objects, -1) {
			shown[m[1]] = m[2]
		}
		return shown
	}, timeout, interval).Should(Equal(want), "the overview lists every Kustomization with its holder")
}

// startReplica starts a replica of the controller called name, sharing the
// objects of cp (kc) with the others.
func startReplica(t *testing.T, g *WithT, kc, name string, extra ...string) *controller {
	t.Helper()
	args := append([]string{"--shards=auto", "--shard-by=object", "--shard-name", name, "--shard-lease-duration", shardLeaseDuration.String(),
		"--requeue-dependency=2s", "--insecure-image-tags", "--storage-adv-addr", sharedArtifactsAddr}, extra...)
	proc, err := startControllerWithEnv(kc, t.TempDir(), "", []string{"RUNTIME_NAMESPACE=" + shardRuntimeNamespace}, args...)
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() {
		proc.Kill()
		if t.Failed() {
			t.Logf("windlass controller %s output (last lines):\n%s", name, lastLines(proc.Output(), 60))
		}
	})
	g.Expect(proc.waitReady(timeout)).To(Succeed(), proc.Output)
	return proc
}

// createShardedApps creates the story's namespaces, each with a
// GitRepository of url and Kustomizations that apply a ConfigMap each, all
// but the first depending on the first, and returns the objects as the
// metrics name them (kind/namespace/name).
func createShardedApps(g *WithT, cp *testenv.Environment, url string) []string {
	ctx := context.Background()
	var objects []string
	for i := range shardNamespaces {
		ns := fmt.Sprintf("shards-%02d", i)
		g.Expect(cp.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
		createIn(g, cp, &sourcev1.GitRepository{}, gitRepositoryYAML(ns, "repo", url))
		objects = append(objects, "GitRepository/"+ns+"/repo")
		for j := range shardKustomizations {
			name := fmt.Sprintf("app-%d", j)
			createIn(g, cp, &kustomizev1.Kustomization{}, shardedAppYAML(ns, name, "{tier: apps}", dependsOnFirst(j)))
			objects = append(objects, "Kustomization/"+ns+"/"+name)
		}
	}
	return objects
}

// shardedAppYAML is the manifest of a Kustomization of the story, name in
// ns with labels: it applies the ConfigMap cm-<name> into ns from the
// GitRepository repo; spec, when not empty, ends its spec.
func shardedAppYAML(ns, name, labels, spec string) string {
	return fmt.Sprintf(`
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: %s, namespace: %s, labels: %s}
spec:
  interval: 10m
  path: ./app
  prune: true
  targetNamespace: %s
  sourceRef: {kind: GitRepository, name: repo}
  postBuild:
    substitute: {app: %s}
%s`, name, ns, labels, ns, name, spec)
}

// waitAllApplied waits until every Kustomization of cp is Ready with
// revision applied.
func waitAllApplied(g *WithT, cp *testenv.Environment, revision string, replicas map[string]*controller) {
	g.Eventually(func(g Gomega) {
		var list kustomizev1.KustomizationList
		g.Expect(cp.Client.List(context.Background(), &list)).To(Succeed())
		g.Expect(list.Items).To(HaveLen(shardNamespaces * shardKustomizations))
		buckets := bucketHolders(g, cp)
		var notReady []string
		for _, ks := range list.Items {
			if !conditions.IsTrue(&ks, meta.ReadyCondition) || ks.Status.LastAppliedRevision != revision {
				notReady = append(notReady, fmt.Sprintf("%s/%s (bucket %q, held by %q: %q)", ks.Namespace, ks.Name,
					ks.Labels[shard.BucketLabel], holderIn(buckets, &ks), conditions.Message(&ks, meta.ReadyCondition)))
			}
		}
		sort.Strings(notReady)
		g.Expect(len(notReady)).To(BeZero(), "Kustomizations not applied, among them: %s",
			strings.Join(notReady[:min(len(notReady), 12)], "; "))
	}, 3*time.Minute, interval).Should(Succeed(), func() string { return replicaTails(replicas) })
}

// expectHeldOnce checks that each object is reconciled by exactly one live
// replica, by their own metrics, and that it is the holder that the Lease
// of its bucket names; it returns the holder of each object.
func expectHeldOnce(g Gomega, cp *testenv.Environment, replicas map[string]*controller, objects []string) map[string]string {
	reconciled := reconciledBy(g, replicas)
	byLease := holdersByLease(g, cp)
	holders := map[string]string{}
	for _, obj := range objects {
		g.Expect(reconciled[obj]).To(HaveLen(1), "%s is reconciled by one replica", obj)
		g.Expect(byLease).To(HaveKeyWithValue(obj, reconciled[obj][0]), "%s is held by the replica that reconciles it", obj)
		holders[obj] = reconciled[obj][0]
	}
	return holders
}

// objectSeries matches the per-object duration series, whose labels are
// kind, name and namespace.
var objectSeries = regexp.MustCompile(`^gotk_reconcile_duration_seconds_count\{kind="([^"]+)",name="([^"]+)",namespace="([^"]+)"\}`)

// reconciledBy returns, for each object, the replicas whose metrics have a
// series of its runs (a replica forgets those of the objects it hands
// over).
func reconciledBy(g Gomega, replicas map[string]*controller) map[string][]string {
	out := map[string][]string{}
	for name, proc := range replicas {
		for _, line := range metricLines(scrape(g, "http://"+proc.MetricsAddr+"/metrics"), "gotk_reconcile_duration_seconds_count") {
			if m := objectSeries.FindStringSubmatch(line); m != nil {
				obj := m[1] + "/" + m[3] + "/" + m[2]
				out[obj] = append(out[obj], name)
			}
		}
	}
	for _, rs := range out {
		sort.Strings(rs)
	}
	return out
}

// holdersByLease returns the holder of every GitRepository and
// Kustomization of cp: the member that the Lease of its bucket names, ""
// when it has no bucket yet or its bucket no Lease.
func holdersByLease(g Gomega, cp *testenv.Environment) map[string]string {
	ctx := context.Background()
	buckets := bucketHolders(g, cp)
	out := map[string]string{}
	var repos sourcev1.GitRepositoryList
	g.Expect(cp.Client.List(ctx, &repos)).To(Succeed())
	for _, r := range repos.Items {
		out["GitRepository/"+r.Namespace+"/"+r.Name] = holderIn(buckets, &r)
	}
	var ks kustomizev1.KustomizationList
	g.Expect(cp.Client.List(ctx, &ks)).To(Succeed())
	for _, k := range ks.Items {
		out["Kustomization/"+k.Namespace+"/"+k.Name] = holderIn(buckets, &k)
	}
	return out
}

// bucketHolders returns, by bucket, the member that each Lease of the
// buckets of the replicas' ring names (a bucket whose Lease names none is
// left out).
func bucketHolders(g Gomega, cp *testenv.Environment) map[int]string {
	var leases coordinationv1.LeaseList
	g.Expect(cp.Client.List(context.Background(), &leases, client.InNamespace(shardRuntimeNamespace),
		client.MatchingLabels{shard.RingLabel: shardRing})).To(Succeed())
	return shard.BucketHolders(leases.Items)
}

// holderIn returns the holder of obj by buckets (see bucketHolders): the
// member its bucket's Lease names, "" when obj has no bucket label or its
// bucket no Lease.
func holderIn(buckets map[int]string, obj client.Object) string {
	b, ok := shard.ParseBucket(obj.GetLabels()[shard.BucketLabel])
	if !ok {
		return ""
	}
	return buckets[b]
}

// bucketShareSizes counts the buckets each member holds, by their Leases.
func bucketShareSizes(buckets map[int]string) map[string]int {
	out := map[string]int{}
	for _, h := range buckets {
		out[h]++
	}
	return out
}

// expectBucketShares waits until every bucket has a Lease that names a
// live replica, and each of these holds an equal share of the buckets (the
// ring assigns each member floor(Buckets/members) or one more), as much
// as its own windlass_shard_buckets says it holds.
func expectBucketShares(g *WithT, cp *testenv.Environment, replicas map[string]*controller) {
	floor := shard.Buckets / len(replicas)
	g.Eventually(func(g Gomega) {
		buckets := bucketHolders(g, cp)
		g.Expect(buckets).To(HaveLen(shard.Buckets), "every bucket has a Lease")
		shares := bucketShareSizes(buckets)
		g.Expect(shares).To(HaveLen(len(replicas)), "the buckets' Leases name the live replicas only: %v", shares)
		for name, proc := range replicas {
			g.Expect(shares[name]).To(And(BeNumerically(">=", floor), BeNumerically("<=", floor+1)),
				"%s holds an equal share of the buckets: %v", name, shares)
			held, ok := sampleOf(scrape(g, "http://"+proc.MetricsAddr+"/metrics"), "windlass_shard_buckets")
			g.Expect(ok).To(BeTrue(), "%s reports windlass_shard_buckets", name)
			g.Expect(held).To(BeNumerically("==", shares[name]), "%s holds the buckets whose Leases name it", name)
		}
	}, 2*time.Minute, interval).Should(Succeed(), func() string { return replicaTails(replicas) })
}

// bucketMovesOf returns the buckets the replicas moved, by their
// windlass_shard_bucket_moves_total{move=move} (claimed, handed_over).
func bucketMovesOf(g Gomega, replicas map[string]*controller, move string) int {
	total := 0
	for _, proc := range replicas {
		n, _ := sampleOf(scrape(g, "http://"+proc.MetricsAddr+"/metrics"), `windlass_shard_bucket_moves_total{move="`+move+`"}`)
		total += int(n)
	}
	return total
}

// sampleOf returns the value of series (its name and labels, as the
// metrics text writes them) in the metrics text, and false when there is
// none (a counter of a label never incremented).
func sampleOf(text, series string) (float64, bool) {
	for _, line := range strings.Split(text, "\n") {
		if value, ok := strings.CutPrefix(line, series+" "); ok {
			n, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
			return n, err == nil
		}
	}
	return 0, false
}

// shareSizes counts the objects each replica holds.
func shareSizes(holders map[string]string) map[string]int {
	out := map[string]int{}
	for _, h := range holders {
		out[h]++
	}
	return out
}

// replicaTails returns the last lines of every replica's output.
func replicaTails(replicas map[string]*controller) string {
	var out string
	for name, proc := range replicas {
		out += fmt.Sprintf("--- %s:\n%s\n", name, lastLines(proc.Output(), 30))
	}
	return out
}

// dependsOnFirst returns the dependsOn of the j-th Kustomization of a
// namespace: the first, for all but the first.
func dependsOnFirst(j int) string {
	if j == 0 {
		return ""
	}
	return "  dependsOn: [{name: app-0}]\n"
}

// notHolderMessage is how the API server refuses a status written by a
// replica that does not hold the object.
const notHolderMessage = "written by a replica that does not hold it"

// denyStatusOfOthers makes the API server of cp refuse the status of a
// GitRepository or Kustomization written by one of the users of
// kubeconfigs (the replicas) unless the Lease of the object's bucket names
// that user, and checks that it does. Call it before any replica starts.
//
// The policy takes the Leases of the replicas' ring as its params: the
// binding selects them by shard.RingLabel in the runtime namespace, and
// the API server evaluates the policy once for each of them, refusing the
// request when any evaluation fails. So an evaluation passes whenever its
// Lease is not the Lease of the object's bucket (a member's Lease, which
// has no bucket label, or another bucket's), and fails when it is and
// names another replica. A replica may not write the status of an object
// that has no bucket yet either: no member holds it. (An object whose
// bucket has no Lease at all passes: no evaluation is of its bucket. The
// story's holdersByLease gives such an object no holder, which
// expectHeldOnce refuses.)
func denyStatusOfOthers(t *testing.T, g *WithT, cp *testenv.Environment, kubeconfigs map[string]string) {
	ctx := context.Background()
	var users []string
	for name := range kubeconfigs {
		users = append(users, "'"+name+"'")
	}
	sort.Strings(users)
	byReplica := fmt.Sprintf("request.userInfo.username in [%s]", strings.Join(users, ","))
	objectBucket := fmt.Sprintf("has(oldObject.metadata.labels) && '%s' in oldObject.metadata.labels", shard.BucketLabel)
	leaseBucket := fmt.Sprintf("has(params.metadata.labels) && '%s' in params.metadata.labels", shard.BucketLabel)
	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "status-by-holder"},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: ptr.To(admissionregistrationv1.Fail),
			ParamKind:     &admissionregistrationv1.ParamKind{APIVersion: coordinationv1.SchemeGroupVersion.String(), Kind: "Lease"},
			MatchConstraints: &admissionregistrationv1.MatchResources{
				ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
					RuleWithOperations: admissionregistrationv1.RuleWithOperations{
						Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Update},
						Rule: admissionregistrationv1.Rule{
							APIGroups: []string{sourcev1.GroupVersion.Group, kustomizev1.GroupVersion.Group}, APIVersions: []string{"*"},
							Resources: []string{"gitrepositories/status", "kustomizations/status"},
						},
					},
				}},
			},
			Validations: []admissionregistrationv1.Validation{{
				// No replica holds an object that has no bucket.
				Expression: fmt.Sprintf("!(%s) || (%s)", byReplica, objectBucket),
				Message:    notHolderMessage + ": it has no bucket",
			}, {
				// The Lease of the object's bucket names the replica.
				Expression: fmt.Sprintf("!(%s) || !(%s) || !(%s) || "+
					"params.metadata.labels['%s'] != oldObject.metadata.labels['%s'] || "+
					"(has(params.spec.holderIdentity) && params.spec.holderIdentity == request.userInfo.username)",
					byReplica, leaseBucket, objectBucket, shard.BucketLabel, shard.BucketLabel),
				Message: notHolderMessage + ": its bucket's Lease names another",
			}},
		},
	}
	binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "status-by-holder"},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName: policy.Name,
			ParamRef: &admissionregistrationv1.ParamRef{
				Selector:                &metav1.LabelSelector{MatchLabels: map[string]string{shard.RingLabel: shardRing}},
				Namespace:               shardRuntimeNamespace,
				ParameterNotFoundAction: ptr.To(admissionregistrationv1.DenyAction),
			},
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
		},
	}

	// The probe: a GitRepository of bucket b, whose Lease names r0; next
	// to it, the Lease of another bucket, naming r1, and a Lease of the
	// ring that is no bucket's (as a member's is), naming r1 too, which
	// must not count. It runs before any replica starts, and the probe and
	// its Leases are gone before one does: the replicas create the
	// buckets' Leases themselves, and no Lease the probe wrote can make
	// one of them believe it, or another, holds a bucket. (A bucket the
	// replicas could not hold, one out of their range, would do as well,
	// but then the probe would not be of a bucket's Lease as they write
	// it.)
	probe := createIn(g, cp, &sourcev1.GitRepository{}, gitRepositoryYAML(shardRuntimeNamespace, "probe", "https://example.com/probe"))
	b := shard.BucketOf(shard.Key(probe, shard.ByObject))
	leases := []*coordinationv1.Lease{
		probeLease(shard.BucketLeaseName(shardRing, b), "r0", map[string]string{shard.BucketLabel: shard.BucketValue(b)}),
		probeLease(shard.BucketLeaseName(shardRing, (b+1)%shard.Buckets), "r1",
			map[string]string{shard.BucketLabel: shard.BucketValue((b + 1) % shard.Buckets)}),
		probeLease("windlass-shard-probe", "r1", nil),
	}
	for _, lease := range leases {
		g.Expect(cp.Client.Create(ctx, lease)).To(Succeed())
	}
	g.Expect(cp.Client.Create(ctx, policy)).To(Succeed())
	g.Expect(cp.Client.Create(ctx, binding)).To(Succeed())
	t.Cleanup(func() { _ = cp.Client.Delete(ctx, binding); _ = cp.Client.Delete(ctx, policy) })

	writeStatus := func(user string) error {
		c := clientOf(g, kubeconfigs[user])
		obj := &sourcev1.GitRepository{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(probe), obj); err != nil {
			return err
		}
		obj.Status.ObservedGeneration++
		return c.Status().Update(ctx, obj)
	}
	// Until the API server reads the policy and its params, it accepts
	// the write, or refuses it for want of params.
	g.Eventually(func() error { return writeStatus("r0") }, timeout, interval).
		Should(MatchError(ContainSubstring(notHolderMessage + ": it has no bucket")))
	g.Expect(cp.Client.Get(ctx, client.ObjectKeyFromObject(probe), probe)).To(Succeed())
	probe.Labels = map[string]string{shard.BucketLabel: shard.BucketValue(b)}
	g.Expect(cp.Client.Update(ctx, probe)).To(Succeed())
	g.Eventually(func() error { return writeStatus("r1") }, timeout, interval).
		Should(MatchError(ContainSubstring(notHolderMessage + ": its bucket's Lease names another")))
	g.Expect(writeStatus("r0")).To(Succeed())
	g.Expect(writeStatus("r2")).To(MatchError(ContainSubstring(notHolderMessage)))

	g.Expect(cp.Client.Delete(ctx, probe)).To(Succeed())
	for _, lease := range leases {
		g.Expect(cp.Client.Delete(ctx, lease)).To(Succeed())
	}
	var left coordinationv1.LeaseList
	g.Expect(cp.Client.List(ctx, &left, client.InNamespace(shardRuntimeNamespace))).To(Succeed())
	g.Expect(left.Items).To(BeEmpty(), "the probe's Leases are gone before a replica starts")
}

// bucketHistory is what a watch of the buckets' Leases saw: the holders
// each bucket's Lease named, each with its spec.acquireTime, which the
// member that wrote the holder (one taking the bucket, or one handing it
// over) set just before it wrote it, on the clock of this machine.
type bucketHistory struct {
	mu      sync.Mutex
	holders map[int][]heldSince
}

// heldSince is a holder of a bucket and when it came to hold it.
type heldSince struct {
	holder string
	since  time.Time
}

// record adds the holder that lease names, when it is a bucket's Lease of
// the replicas' ring.
func (h *bucketHistory) record(lease *coordinationv1.Lease) {
	b, holder, ok := shard.ReadBucketLease(lease)
	if !ok || lease.Labels[shard.RingLabel] != shardRing || lease.Spec.AcquireTime == nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	seen := heldSince{holder: holder, since: lease.Spec.AcquireTime.Time}
	if !slices.Contains(h.holders[b], seen) {
		h.holders[b] = append(h.holders[b], seen)
	}
}

// holderAt returns the member that held bucket b at time at, "" when none
// did.
func (h *bucketHistory) holderAt(b int, at time.Time) string {
	h.mu.Lock()
	defer h.mu.Unlock()
	holder, since := "", time.Time{}
	for _, s := range h.holders[b] {
		if !s.since.After(at) && !s.since.Before(since) {
			holder, since = s.holder, s.since
		}
	}
	return holder
}

// recordBucketHolders watches the Leases of the runtime namespace until
// the test ends, and records the buckets' holders: call it before the
// replicas start. A watch that ends is opened again, from a new list.
func recordBucketHolders(t *testing.T, g *WithT, cp *testenv.Environment) *bucketHistory {
	c, err := client.NewWithWatch(cp.Config, client.Options{Scheme: scheme.New()})
	g.Expect(err).NotTo(HaveOccurred())
	ctx, cancel := context.WithCancel(context.Background())
	h := &bucketHistory{holders: map[int][]heldSince{}}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			var list coordinationv1.LeaseList
			if err := c.List(ctx, &list, client.InNamespace(shardRuntimeNamespace)); err != nil {
				select { // the API server is busy, or the test ends
				case <-ctx.Done():
				case <-time.After(interval):
				}
				continue
			}
			for i := range list.Items {
				h.record(&list.Items[i])
			}
			w, err := c.Watch(ctx, &coordinationv1.LeaseList{ListMeta: metav1.ListMeta{ResourceVersion: list.ResourceVersion}},
				client.InNamespace(shardRuntimeNamespace))
			if err != nil {
				continue
			}
			for ev := range w.ResultChan() {
				if lease, ok := ev.Object.(*coordinationv1.Lease); ok {
					h.record(lease)
				}
			}
			w.Stop()
		}
	}()
	t.Cleanup(func() { cancel(); <-done })
	return h
}

// refusalLine matches a replica's log line that says the API server
// refused one of its writes as a non-holder's: its time, then its fields.
var refusalLine = regexp.MustCompile(`^(\S+)\t.*` + regexp.QuoteMeta(notHolderMessage) + `.*$`)

// expectNoStatusOfOthers checks that no replica wrote the status of an
// object that it did not hold, from their outputs (each replica's, by
// name, one for each of its processes): every refusal of the API server
// that one logged must be of a write by the replica that held the
// object's bucket when it logged it, as the buckets' Leases say (history).
// The API server reads the Leases that the policy takes as params from a
// cache of its own, which may not have seen yet the Lease that a replica
// read before it started the run: it refuses the new holder's first write
// then. Every other refusal fails the story.
func expectNoStatusOfOthers(t *testing.T, g *WithT, cp *testenv.Environment, history *bucketHistory, outputs map[string][]string) {
	ctx := context.Background()
	lagged := map[string]bool{} // the runs refused, each logged more than once
	for name, outs := range outputs {
		for _, out := range outs {
			for _, line := range strings.Split(out, "\n") {
				m := refusalLine.FindStringSubmatch(line)
				if m == nil {
					continue
				}
				at, err := time.Parse(time.RFC3339Nano, m[1])
				g.Expect(err).NotTo(HaveOccurred(), line)
				var fields struct {
					Kind      string `json:"controllerKind"`
					Namespace string `json:"namespace"`
					Name      string `json:"name"`
					Run       string `json:"reconcileID"`
				}
				_, rest, _ := strings.Cut(line, "\t{")
				g.Expect(json.Unmarshal([]byte("{"+rest), &fields)).To(Succeed(), line)
				var obj client.Object = &sourcev1.GitRepository{}
				if fields.Kind == kustomizev1.KustomizationKind {
					obj = &kustomizev1.Kustomization{}
				}
				g.Expect(cp.Client.Get(ctx, client.ObjectKey{Namespace: fields.Namespace, Name: fields.Name}, obj)).To(Succeed(), line)
				b, ok := shard.ParseBucket(obj.GetLabels()[shard.BucketLabel])
				g.Expect(ok).To(BeTrue(), "%s wrote the status of an object with no bucket: %s", name, line)
				g.Expect(history.holderAt(b, at)).To(Equal(name), "%s wrote the status of an object of bucket %d, which it did not hold: %s", name, b, line)
				lagged[name+"/"+fields.Run] = true
			}
		}
	}
	if len(lagged) > 0 {
		t.Logf("the API server refused the writes of %d runs of the holder, from a view of the Leases older than the holder's", len(lagged))
	}
}

// probeLease is a Lease of the replicas' ring, with labels besides,
// naming holder, for the probe of denyStatusOfOthers.
func probeLease(name, holder string, labels map[string]string) *coordinationv1.Lease {
	l := map[string]string{shard.RingLabel: shardRing}
	for k, v := range labels {
		l[k] = v
	}
	return &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: shardRuntimeNamespace, Labels: l},
		Spec:       coordinationv1.LeaseSpec{HolderIdentity: ptr.To(holder)},
	}
}

// clientOf returns a client of the cluster and user of kubeconfig.
func clientOf(g *WithT, kubeconfig string) client.Client {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	g.Expect(err).NotTo(HaveOccurred())
	c, err := client.New(cfg, client.Options{Scheme: scheme.New()})
	g.Expect(err).NotTo(HaveOccurred())
	return c
}

// expectTagsFromEveryReplica scans an image repository with one replica
// (the image kinds are held as one) and reads its tags from every replica:
// the others forward the request to the holder.
func expectTagsFromEveryReplica(t *testing.T, g *WithT, cp *testenv.Environment, replicas map[string]*controller) {
	ctx := context.Background()
	image := testutil.StartRegistry(t, "", "") + "/podinfo"
	testutil.PushImage(t, image, []string{"6.0.0", "6.1.0"})
	repo := createIn(g, cp, &imagev1.ImageRepository{}, fmt.Sprintf(`
apiVersion: image.toolkit.fluxcd.io/v1
kind: ImageRepository
metadata: {name: podinfo, namespace: shards-00}
spec: {image: %s, interval: 1h, insecure: true}
`, image))
	g.Eventually(func(g Gomega) {
		g.Expect(cp.Client.Get(ctx, client.ObjectKeyFromObject(repo), repo)).To(Succeed())
		g.Expect(repo.Status.LastScanResult).NotTo(BeNil())
		g.Expect(repo.Status.LastScanResult.TagCount).To(Equal(2))
	}, timeout, interval).Should(Succeed(), func() string { return replicaTails(replicas) })
	holder := holderIn(bucketHolders(g, cp), repo)
	for name, proc := range replicas {
		body := scrape(g, "http://"+proc.TagsAddr+"/images/shards-00/podinfo/tags")
		g.Expect(body).To(ContainSubstring("6.1.0"), "the tags from %s (held by %s)", name, holder)
	}
}

// expectWebhookReachesEveryHolder posts to a generic Receiver, through one
// replica, a webhook that names every Kustomization of a namespace by
// label: each is reconciled, whichever replica holds it.
func expectWebhookReachesEveryHolder(g *WithT, cp *testenv.Environment, replicas map[string]*controller) {
	ctx := context.Background()
	const ns = "shards-01"
	g.Expect(cp.Client.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "hook-token"},
		StringData: map[string]string{"token": "h00k-t0ken"}})).To(Succeed())
	rcv := createIn(g, cp, &notificationv1.Receiver{}, fmt.Sprintf(`
apiVersion: notification.toolkit.fluxcd.io/v1
kind: Receiver
metadata: {name: hook, namespace: %s}
spec:
  type: generic
  secretRef: {name: hook-token}
  resources:
  - {apiVersion: kustomize.toolkit.fluxcd.io/v1, kind: Kustomization, name: "*", matchLabels: {tier: apps}}
`, ns))
	g.Eventually(func(g Gomega) {
		g.Expect(cp.Client.Get(ctx, client.ObjectKeyFromObject(rcv), rcv)).To(Succeed())
		g.Expect(rcv.Status.WebhookPath).NotTo(BeEmpty())
	}, timeout, interval).Should(Succeed(), func() string { return replicaTails(replicas) })
	var list kustomizev1.KustomizationList
	g.Expect(cp.Client.List(ctx, &list, client.InNamespace(ns))).To(Succeed())
	buckets := bucketHolders(g, cp)
	holders := map[string]bool{}
	for _, ks := range list.Items {
		holders[holderIn(buckets, &ks)] = true
	}
	g.Expect(len(holders)).To(BeNumerically(">", 1), "the namespace's Kustomizations are spread over replicas")

	resp, err := httpClient.Post("http://"+replicas["r0"].ReceiverAddr+rcv.Status.WebhookPath, "application/json", strings.NewReader("{}"))
	g.Expect(err).NotTo(HaveOccurred())
	_ = resp.Body.Close()
	g.Expect(resp.StatusCode).To(Equal(http.StatusOK))
	g.Eventually(func(g Gomega) {
		g.Expect(cp.Client.List(ctx, &list, client.InNamespace(ns))).To(Succeed())
		for _, ks := range list.Items {
			requested := ks.Annotations[meta.ReconcileRequestAnnotation]
			g.Expect(requested).NotTo(BeEmpty(), "%s was asked to reconcile", ks.Name)
			g.Expect(ks.Status.LastHandledReconcileAt).To(Equal(requested), "%s (held by %s) reconciled", ks.Name, holderIn(buckets, &ks))
		}
	}, timeout, interval).Should(Succeed(), func() string { return replicaTails(replicas) })
}
