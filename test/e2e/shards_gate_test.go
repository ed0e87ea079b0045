package e2e

import (
	"context"
	"fmt"
	"sort"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gatingv1alpha1 "github.com/windlass-dev/windlass/api/gating/v1alpha1"
	kustomizev1 "github.com/windlass-dev/windlass/api/kustomize/v1"
	"github.com/windlass-dev/windlass/api/meta"
	sourcev1 "github.com/windlass-dev/windlass/api/source/v1"
	"github.com/windlass-dev/windlass/internal/conditions"
	"github.com/windlass-dev/windlass/internal/shard"
	"github.com/windlass-dev/windlass/internal/testutil/testenv"
)

// shardGateNamespace holds the gated Kustomizations of
// expectGateHoldsEveryHolder, which are not among the story's
// shardNamespaces*shardKustomizations: check those before.
const shardGateNamespace = "shards-gated"

// expectGateHoldsEveryHolder puts a Kustomization held by each replica
// behind one Gate, closed by default, which one replica holds and
// reconciles: each waits for approval and applies nothing; once `windlass
// gate open` (run with kc) opens it, each applies revision of url.
func expectGateHoldsEveryHolder(g *WithT, cp *testenv.Environment, kc, url, revision string, replicas map[string]*controller) {
	ctx := context.Background()
	ns := shardGateNamespace
	g.Expect(cp.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
	createIn(g, cp, &gatingv1alpha1.Gate{}, fmt.Sprintf(`
apiVersion: gating.toolkit.fluxcd.io/v1alpha1
kind: Gate
metadata: {name: hold, namespace: %s}
spec: {interval: 1h, default: closed, window: 1h}
`, ns))
	createIn(g, cp, &sourcev1.GitRepository{}, gitRepositoryYAML(ns, "repo", url))
	names := namesHeldByEach(g, cp, ns, replicas)
	for _, name := range names {
		createIn(g, cp, &kustomizev1.Kustomization{}, shardedAppYAML(ns, name, "{}", "  gates: [{name: hold}]\n"))
	}
	approval := func(g Gomega, name string) (*metav1.Condition, string) {
		var ks kustomizev1.Kustomization
		g.Expect(cp.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &ks)).To(Succeed())
		return conditions.Get(&ks, meta.ApprovedCondition), ks.Status.LastAppliedRevision
	}
	configMap := func(name string) error {
		return cp.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "cm-" + name}, &corev1.ConfigMap{})
	}
	g.Eventually(func(g Gomega) {
		for _, name := range names {
			approved, _ := approval(g, name)
			g.Expect(approved).NotTo(BeNil(), "%s has a verdict", name)
			g.Expect(approved.Status).To(Equal(metav1.ConditionFalse), "%s waits", name)
			g.Expect(approved.Message).To(ContainSubstring("gate '%s/hold' is closed", ns))
		}
	}, timeout, interval).Should(Succeed(), func() string { return replicaTails(replicas) })
	for _, name := range names {
		g.Expect(configMap(name)).NotTo(Succeed(), "%s applied nothing behind the closed gate", name)
	}

	out, errOut, code := runCLIAgainst(g, kc, "gate", "open", "hold", "-n", ns, "--timeout", "1m")
	g.Expect(code).To(Equal(0), out+errOut)
	g.Eventually(func(g Gomega) {
		for _, name := range names {
			approved, applied := approval(g, name)
			g.Expect(approved).NotTo(BeNil())
			g.Expect(approved.Status).To(Equal(metav1.ConditionTrue), "%s let through", name)
			g.Expect(applied).To(Equal(revision))
			g.Expect(configMap(name)).To(Succeed())
		}
	}, timeout, interval).Should(Succeed(), func() string { return replicaTails(replicas) })
}

// namesHeldByEach returns a name for a Kustomization of ns whose bucket
// (the story shards by object) each replica holds now, by the buckets'
// Leases.
func namesHeldByEach(g *WithT, cp *testenv.Environment, ns string, replicas map[string]*controller) []string {
	buckets := bucketHolders(g, cp)
	byHolder := map[string]string{}
	for i := 0; len(byHolder) < len(replicas) && i < 1000; i++ {
		name := fmt.Sprintf("gated-%d", i)
		holder := buckets[shard.BucketOf(shard.Key(&metav1.ObjectMeta{Namespace: ns, Name: name}, shard.ByObject))]
		if _, ok := replicas[holder]; ok && byHolder[holder] == "" {
			byHolder[holder] = name
		}
	}
	g.Expect(byHolder).To(HaveLen(len(replicas)), "a name for each replica's buckets")
	names := make([]string, 0, len(byHolder))
	for _, name := range byHolder {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}
