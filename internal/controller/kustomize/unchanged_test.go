package kustomize

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kustomizev1 "github.com/windlass-dev/windlass/api/kustomize/v1"
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
		"deploy/a.yaml":   "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  namespace: " + ns + "\ndata:\n  value: ${value}\n",
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
	first := dryRuns.in(ns)
	g.Expect(first).To(BeNumerically(">=", 2), "the first run dry-runs every object")

	for _, token := range []string{"tick-1", "tick-2"} {
		requestReconcile(g, ks, token)
		got := waitForKs(g, key, handled(token))
		g.Expect(got.Status.History[0].TotalReconciliations).To(BeNumerically(">", 1))
	}
	g.Expect(dryRuns.in(ns)).To(Equal(first), "runs with nothing changed send no dry run")

	// Drift is still found and reverted.
	var cm corev1.ConfigMap
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "a"}, &cm)).To(Succeed())
	cm.Data["value"] = "edited"
	g.Expect(env.Client.Update(ctx, &cm, client.FieldOwner("kubectl-edit"))).To(Succeed())
	requestReconcile(g, ks, "after-edit")
	waitForKs(g, key, handled("after-edit"))
	g.Expect(value()).To(Equal("one"))
	g.Expect(dryRuns.in(ns)).To(BeNumerically(">", first))

	// A new value of a substitution variable is applied, though neither the
	// source nor the spec changed.
	vars := &corev1.ConfigMap{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "vars"}, vars)).To(Succeed())
	vars.Data["value"] = "two"
	g.Expect(env.Client.Update(ctx, vars)).To(Succeed())
	requestReconcile(g, ks, "new-var")
	waitForKs(g, key, handled("new-var"))
	g.Expect(value()).To(Equal("two"))

	// So is a change of the spec.
	g.Expect(env.Client.Patch(ctx, ks, client.RawPatch("application/merge-patch+json",
		[]byte(`{"spec":{"postBuild":{"substitute":{"value":"three"},"substituteFrom":null}}}`)))).To(Succeed())
	g.Eventually(value, timeout, interval).Should(Equal("three"))
}
