package kustomize

import (
	"context"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kustomizev1 "github.com/windlass-dev/windlass/api/kustomize/v1"
	sourcev1 "github.com/windlass-dev/windlass/api/source/v1"
	"github.com/windlass-dev/windlass/internal/metrics"
	"github.com/windlass-dev/windlass/internal/testutil"
)

// TestUnchangedRunsApplyNothing reconciles a Ready Kustomization again
// with nothing changed: no dry run is sent. A change of any input (an edit
// of an applied object, a substitution variable, the spec) is applied at
// the next run.
func TestUnchangedRunsApplyNothing(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.CreateNamespace(t)
	_, src := appRepo(t, "app", map[string]string{
		"deploy/a.yaml":   substitutedConfigMap(ns, "a"),
		"deploy/web.yaml": deployment(ns, "web"),
	})
	applyManifests(g, ns, src)
	applyManifests(g, ns, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: vars\ndata:\n  value: one\n---\n"+
		kustomization("app", "app", "  path: ./deploy\n  wait: true\n  postBuild:\n    substituteFrom:\n    - kind: ConfigMap\n      name: vars\n"))
	key := client.ObjectKey{Namespace: ns, Name: "app"}
	ks := &kustomizev1.Kustomization{ObjectMeta: objectMeta(ns, "app")}
	handled := func(token string) func(*kustomizev1.Kustomization) bool {
		return func(k *kustomizev1.Kustomization) bool {
			return ksReady("")(k) && k.Status.LastHandledReconcileAt == token
		}
	}
	value := func() string {
		var cm corev1.ConfigMap
		g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "a"}, &cm)).To(Succeed())
		return cm.Data["value"]
	}
	waitForKs(g, key, ksReady(""))
	g.Expect(value()).To(Equal("one"))
	first := dryRuns.In(ns)
	g.Expect(first).To(BeZero(), "the first apply sends no dry run")
	g.Expect(applies.In(ns)).To(Equal(2), "the first apply writes each object once")

	testutil.RequestReconcile(g, env.Client, ks, "tick-0")
	waitForKs(g, key, handled("tick-0"))
	applied := func() int { return reads.Of(ns, "configmaps", "a") + reads.Of(ns, "deployments", "web") }
	read := applied()
	for _, token := range []string{"tick-1", "tick-2"} {
		testutil.RequestReconcile(g, env.Client, ks, token)
		got := waitForKs(g, key, handled(token))
		g.Expect(got.Status.History[0].TotalReconciliations).To(BeNumerically(">", 1))
	}
	g.Expect(dryRuns.In(ns)).To(Equal(first), "runs with nothing changed send no dry run")
	g.Expect(applied()).To(Equal(read), "nor read the objects, whose versions the watch says unchanged")

	// Drift is still found and reverted.
	var cm corev1.ConfigMap
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "a"}, &cm)).To(Succeed())
	cm.Data["value"] = "edited"
	g.Expect(env.Client.Update(ctx, &cm, client.FieldOwner("kubectl-edit"))).To(Succeed())
	testutil.RequestReconcile(g, env.Client, ks, "after-edit")
	waitForKs(g, key, handled("after-edit"))
	g.Expect(value()).To(Equal("one"))
	g.Expect(dryRuns.In(ns)).To(BeNumerically(">", first))

	// A new value of a substitution variable is applied, though neither the
	// source nor the spec changed.
	vars := &corev1.ConfigMap{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "vars"}, vars)).To(Succeed())
	vars.Data["value"] = "two"
	g.Expect(env.Client.Update(ctx, vars)).To(Succeed())
	testutil.RequestReconcile(g, env.Client, ks, "new-var")
	waitForKs(g, key, handled("new-var"))
	g.Expect(value()).To(Equal("two"))

	// So is a change of the spec.
	g.Expect(env.Client.Patch(ctx, ks, client.RawPatch("application/merge-patch+json",
		[]byte(`{"spec":{"postBuild":{"substitute":{"value":"three"},"substituteFrom":null}}}`)))).To(Succeed())
	g.Eventually(value, timeout, interval).Should(Equal("three"))
}

// TestQuietRunsWriteNoStatus: a Kustomization whose runs change nothing
// (its interval comes, nothing moved) writes no status; the history counts
// those runs at the next status write that something else needs.
func TestQuietRunsWriteNoStatus(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.CreateNamespace(t)
	_, src := appRepo(t, "app", map[string]string{"deploy/a.yaml": configMap(ns, "a", "1")})
	applyManifests(g, ns, src)
	applyManifests(g, ns, strings.Replace(kustomization("app", "app", "  path: ./deploy\n"), "interval: 10m", "interval: 1s", 1))
	key := client.ObjectKey{Namespace: ns, Name: "app"}
	runs := func() uint64 { return metrics.Runs(kustomizev1.KustomizationKind, key) }
	waitForKs(g, key, ksReady(""))
	// A run soon after the first apply may still write (status.verified,
	// once the watch of the applied objects has their versions): the
	// story looks for runs in a row that wrote nothing, counted from
	// before the read of the status. A run counts once it has ended, after
	// its write: the first of those counted may be one that wrote just
	// before the read (one run of an object at a time), so three are
	// waited for, of which at least two wrote nothing.
	var (
		before, after *kustomizev1.Kustomization
		since         uint64
	)
	g.Eventually(func(g Gomega) {
		since = runs()
		before = &kustomizev1.Kustomization{}
		g.Expect(env.Client.Get(ctx, key, before)).To(Succeed())
		g.Eventually(runs, timeout, interval).Should(BeNumerically(">=", since+3))
		after = &kustomizev1.Kustomization{}
		g.Expect(env.Client.Get(ctx, key, after)).To(Succeed())
		g.Expect(after.ResourceVersion).To(Equal(before.ResourceVersion), "runs that changed nothing wrote nothing")
	}, 2*timeout, interval).Should(Succeed())

	testutil.RequestReconcile(g, env.Client, after, "now")
	handled := waitForKs(g, key, func(k *kustomizev1.Kustomization) bool { return k.Status.LastHandledReconcileAt == "now" })
	g.Expect(handled.Status.History).To(HaveLen(1))
	counted := handled.Status.History[0].TotalReconciliations - before.Status.History[0].TotalReconciliations
	g.Expect(counted).To(BeNumerically(">=", 3), "the quiet runs and the one that handled the request")
	g.Expect(counted).To(BeNumerically("<=", runs()-since+1))
}

// TestRevisionThatDoesNotChangeAnAppAppliesNothing serves two apps from
// one repository, as a monorepo does: a commit that changes one app gives
// both Kustomizations the new revision, and only the changed app is dry-run
// and applied.
func TestRevisionThatDoesNotChangeAnAppAppliesNothing(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.CreateNamespace(t)
	nsA, nsB := env.CreateNamespace(t), env.CreateNamespace(t)
	repo, src := appRepo(t, "mono", map[string]string{
		"a/cm.yaml": configMap(nsA, "a", "1"),
		"b/cm.yaml": configMap(nsB, "b", "1"),
	})
	applyManifests(g, ns, src)
	applyManifests(g, ns, kustomization("a", "mono", "  path: ./a\n"))
	applyManifests(g, ns, kustomization("b", "mono", "  path: ./b\n"))
	waitForKs(g, client.ObjectKey{Namespace: ns, Name: "a"}, ksReady(""))
	waitForKs(g, client.ObjectKey{Namespace: ns, Name: "b"}, ksReady(""))
	dryRunsA, dryRunsB := dryRuns.In(nsA), dryRuns.In(nsB)

	sha := repo.MustCommit(t, "main", map[string]string{"b/cm.yaml": configMap(nsB, "b", "2")}, "change b")
	testutil.RequestReconcile(g, env.Client, &sourcev1.GitRepository{ObjectMeta: objectMeta(ns, "mono")}, "change-b")
	waitForKs(g, client.ObjectKey{Namespace: ns, Name: "a"}, ksReady("main@sha1:"+sha))
	waitForKs(g, client.ObjectKey{Namespace: ns, Name: "b"}, ksReady("main@sha1:"+sha))

	var cm corev1.ConfigMap
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: nsB, Name: "b"}, &cm)).To(Succeed())
	g.Expect(cm.Data["value"]).To(Equal("2"))
	g.Expect(dryRuns.In(nsB)).To(BeNumerically(">", dryRunsB), "the changed app is dry-run and applied")
	g.Expect(dryRuns.In(nsA)).To(Equal(dryRunsA), "the unchanged app is not")

	// Drift in the unchanged app is still found at its next revision.
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: nsA, Name: "a"}, &cm)).To(Succeed())
	cm.Data["value"] = "edited"
	g.Expect(env.Client.Update(ctx, &cm, client.FieldOwner("kubectl-edit"))).To(Succeed())
	sha = repo.MustCommit(t, "main", map[string]string{"b/cm.yaml": configMap(nsB, "b", "3")}, "change b again")
	testutil.RequestReconcile(g, env.Client, &sourcev1.GitRepository{ObjectMeta: objectMeta(ns, "mono")}, "change-b-again")
	waitForKs(g, client.ObjectKey{Namespace: ns, Name: "a"}, ksReady("main@sha1:"+sha))
	g.Eventually(func() string {
		_ = env.Client.Get(ctx, client.ObjectKey{Namespace: nsA, Name: "a"}, &cm)
		return cm.Data["value"]
	}, timeout, interval).Should(Equal("1"))
}

// substitutedConfigMap returns a ConfigMap whose value is the
// substitution variable value.
func substitutedConfigMap(ns, name string) string {
	return "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: " + name + "\n  namespace: " + ns + "\ndata:\n  value: ${value}\n"
}
