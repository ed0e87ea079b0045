package e2e

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
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
	"github.com/windlass-dev/windlass/internal/scheme"
	"github.com/windlass-dev/windlass/internal/shard"
	"github.com/windlass-dev/windlass/internal/testutil"
	"github.com/windlass-dev/windlass/internal/testutil/childproc"
	"github.com/windlass-dev/windlass/internal/testutil/testenv"
)

// The size of the sharding story: namespaces, each with a GitRepository
// and its Kustomizations.
const (
	shardNamespaces       = 30
	shardKustomizations   = 10
	shardLeaseDuration    = 6 * time.Second
	shardRuntimeNamespace = "windlass-system"
)

// Three replicas started with --shards=auto --shard-by=object share the
// objects: each object is held by exactly one replica, the one whose own
// metrics say it reconciled it, and a Kustomization whose GitRepository or
// dependency another replica holds reads them across (the artifact over
// HTTP). A replica killed with SIGKILL loses its objects to the others,
// which reconcile every one of them; started again, it takes its share
// back, and again each object is reconciled by one replica only. All along,
// the API server refuses a status written by a replica that does not hold
// the object, and the test checks that no replica was refused. The web UI
// of one replica lists every Kustomization and names the replica that
// holds each.
func TestShards_ShareFailoverAndRejoin(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	cp, _ := privateControlPlane(t, g)
	g.Expect(cp.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: shardRuntimeNamespace}})).To(Succeed())
	kubeconfigs := map[string]string{}
	for _, name := range []string{"r0", "r1", "r2"} {
		kc, err := cp.KubeconfigFileOf(t.TempDir(), name)
		g.Expect(err).NotTo(HaveOccurred())
		kubeconfigs[name] = kc
	}
	denyStatusOfOthers(t, g, cp, kubeconfigs)
	url, sha := servedRepo(t, "shards", map[string]string{
		"app/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm-${app}\ndata:\n  app: ${app}\n",
	})

	uiAddrs, err := childproc.FreeAddrs(1)
	g.Expect(err).NotTo(HaveOccurred())
	replicas := map[string]*controller{"r0": startReplica(t, g, kubeconfigs["r0"], "r0", "--ui-addr", uiAddrs[0])}
	for _, name := range []string{"r1", "r2"} {
		replicas[name] = startReplica(t, g, kubeconfigs[name], name)
	}
	objects := createShardedApps(g, cp, url)
	waitAllApplied(g, cp, "main@sha1:"+sha, replicas)
	holders := expectHeldOnce(g, cp, replicas, objects)
	t.Logf("shares: %v", shareSizes(holders))
	for name, proc := range replicas {
		g.Expect(shareSizes(holders)).To(HaveKeyWithValue(name, BeNumerically(">", 0)), "every replica holds a share")
		g.Expect(scrape(g, "http://"+proc.MetricsAddr+"/metrics")).To(ContainSubstring("\nwindlass_shard_members 3\n"),
			"%s sees three members", name)
	}

	killed := replicas["r1"]
	survivorsDryRuns := apiRequestsOf(g, map[string]*controller{"r0": replicas["r0"], "r2": replicas["r2"]}, `dry_run="true"`)
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
	expectHeldOnce(g, cp, replicas, objects)

	replicas["r1"] = startReplica(t, g, kubeconfigs["r1"], "r1")
	g.Eventually(func(g Gomega) {
		held := expectHeldOnce(g, cp, replicas, objects)
		g.Expect(shareSizes(held)).To(HaveKeyWithValue("r1", BeNumerically(">", 0)), "the replica that came back takes a share")
	}, 2*time.Minute, interval).Should(Succeed())
	waitAllApplied(g, cp, "main@sha1:"+sha, replicas)
	expectArtifactsOnlyAtHolders(g, cp, replicas)
	expectTagsFromEveryReplica(t, g, cp, replicas)
	expectWebhookReachesEveryHolder(g, cp, replicas)
	expectOverviewNamesEveryHolder(g, cp, uiAddrs[0])
	waitAllApplied(g, cp, "main@sha1:"+sha, replicas) // nothing failed on an artifact removed after a handover
	for name, proc := range replicas {
		g.Expect(proc.Output()).NotTo(ContainSubstring(notHolderMessage), "%s wrote the status of an object it did not hold", name)
	}
	g.Expect(killed.Output()).NotTo(ContainSubstring(notHolderMessage))
}

// expectArtifactsOnlyAtHolders checks that the artifacts of every
// GitRepository are in the storage of the replica that holds it and of no
// other live one: a replica that handed a source over removed them once
// the new holder published its own.
func expectArtifactsOnlyAtHolders(g *WithT, cp *testenv.Environment, replicas map[string]*controller) {
	g.Eventually(func(g Gomega) {
		for obj, holder := range holderLabels(g, cp) {
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
// too, each with the replica its holder label names.
func expectOverviewNamesEveryHolder(g *WithT, cp *testenv.Environment, addr string) {
	want := map[string]string{}
	for obj, holder := range holderLabels(g, cp) {
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
		"--requeue-dependency=2s", "--insecure-image-tags"}, extra...)
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
			createIn(g, cp, &kustomizev1.Kustomization{}, fmt.Sprintf(`
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: %s, namespace: %s, labels: {tier: apps}}
spec:
  interval: 10m
  path: ./app
  prune: true
  targetNamespace: %s
  sourceRef: {kind: GitRepository, name: repo}
  postBuild:
    substitute: {app: %s}
%s`, name, ns, ns, name, dependsOnFirst(j)))
			objects = append(objects, "Kustomization/"+ns+"/"+name)
		}
	}
	return objects
}

// waitAllApplied waits until every Kustomization of cp is Ready with
// revision applied.
func waitAllApplied(g *WithT, cp *testenv.Environment, revision string, replicas map[string]*controller) {
	g.Eventually(func(g Gomega) {
		var list kustomizev1.KustomizationList
		g.Expect(cp.Client.List(context.Background(), &list)).To(Succeed())
		g.Expect(list.Items).To(HaveLen(shardNamespaces * shardKustomizations))
		notReady := 0
		for _, ks := range list.Items {
			if !conditions.IsTrue(&ks, meta.ReadyCondition) || ks.Status.LastAppliedRevision != revision {
				notReady++
			}
		}
		g.Expect(notReady).To(BeZero(), "Kustomizations not applied")
	}, 3*time.Minute, interval).Should(Succeed(), func() string { return replicaTails(replicas) })
}

// expectHeldOnce checks that each object is reconciled by exactly one live
// replica, by their own metrics, and that it is the holder its label
// names; it returns the holder of each object.
func expectHeldOnce(g Gomega, cp *testenv.Environment, replicas map[string]*controller, objects []string) map[string]string {
	reconciled := reconciledBy(g, replicas)
	labels := holderLabels(g, cp)
	holders := map[string]string{}
	for _, obj := range objects {
		g.Expect(reconciled[obj]).To(HaveLen(1), "%s is reconciled by one replica", obj)
		g.Expect(labels).To(HaveKeyWithValue(obj, reconciled[obj][0]), "%s is held by the replica that reconciles it", obj)
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

// holderLabels returns the holder label of every GitRepository and
// Kustomization of cp.
func holderLabels(g Gomega, cp *testenv.Environment) map[string]string {
	ctx := context.Background()
	out := map[string]string{}
	var repos sourcev1.GitRepositoryList
	g.Expect(cp.Client.List(ctx, &repos)).To(Succeed())
	for _, r := range repos.Items {
		out["GitRepository/"+r.Namespace+"/"+r.Name] = r.Labels[shard.HolderLabel]
	}
	var ks kustomizev1.KustomizationList
	g.Expect(cp.Client.List(ctx, &ks)).To(Succeed())
	for _, k := range ks.Items {
		out["Kustomization/"+k.Namespace+"/"+k.Name] = k.Labels[shard.HolderLabel]
	}
	return out
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
// kubeconfigs (the replicas) that its holder label does not name, and
// checks that it does.
func denyStatusOfOthers(t *testing.T, g *WithT, cp *testenv.Environment, kubeconfigs map[string]string) {
	ctx := context.Background()
	var users []string
	for name := range kubeconfigs {
		users = append(users, "'"+name+"'")
	}
	sort.Strings(users)
	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "status-by-holder"},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: ptr.To(admissionregistrationv1.Fail),
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
				Expression: fmt.Sprintf("!(request.userInfo.username in [%s]) || "+
					"(has(oldObject.metadata.labels) && '%s' in oldObject.metadata.labels && "+
					"oldObject.metadata.labels['%s'] == request.userInfo.username)",
					strings.Join(users, ","), shard.HolderLabel, shard.HolderLabel),
				Message: notHolderMessage,
			}},
		},
	}
	binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "status-by-holder"},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        policy.Name,
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
		},
	}
	g.Expect(cp.Client.Create(ctx, policy)).To(Succeed())
	g.Expect(cp.Client.Create(ctx, binding)).To(Succeed())

	// The probe: a GitRepository held by r0, whose status r1 may not write
	// and r0 may.
	probe := &sourcev1.GitRepository{}
	createIn(g, cp, probe, gitRepositoryYAML(shardRuntimeNamespace, "probe", "https://example.com/probe"))
	probe.Labels = map[string]string{shard.HolderLabel: "r0"}
	g.Expect(cp.Client.Update(ctx, probe)).To(Succeed())
	writeStatus := func(user string) error {
		c := clientOf(g, kubeconfigs[user])
		obj := &sourcev1.GitRepository{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(probe), obj); err != nil {
			return err
		}
		obj.Status.ObservedGeneration++
		return c.Status().Update(ctx, obj)
	}
	g.Eventually(func() error { return writeStatus("r1") }, timeout, interval).Should(MatchError(ContainSubstring(notHolderMessage)))
	g.Expect(writeStatus("r0")).To(Succeed())
	g.Expect(cp.Client.Delete(ctx, probe)).To(Succeed())
	t.Cleanup(func() { _ = cp.Client.Delete(ctx, binding); _ = cp.Client.Delete(ctx, policy) })
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
	holder := repo.Labels[shard.HolderLabel]
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
	holders := map[string]bool{}
	for _, ks := range list.Items {
		holders[ks.Labels[shard.HolderLabel]] = true
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
			g.Expect(ks.Status.LastHandledReconcileAt).To(Equal(requested), "%s (held by %s) reconciled", ks.Name, ks.Labels[shard.HolderLabel])
		}
	}, timeout, interval).Should(Succeed(), func() string { return replicaTails(replicas) })
}
