package kustomize

import (
	"context"
	"errors"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kustomizev1 "github.com/windlass-dev/windlass/api/kustomize/v1"
	"github.com/windlass-dev/windlass/internal/reconcile/outcome"
	"github.com/windlass-dev/windlass/internal/testutil"
)

// TestInvalidIgnoreRulesStall: an invalid spec.ignore stalls, with the
// message of kustomization.IgnoreRules (whose tests cover the rules).
func TestInvalidIgnoreRulesStall(t *testing.T) {
	g := NewWithT(t)
	for _, bad := range []kustomizev1.IgnoreRule{
		{Paths: []string{"spec/replicas"}},
		{Paths: []string{"/x"}, Target: &kustomizev1.Selector{Name: "("}},
		{Paths: []string{"/x"}, Target: &kustomizev1.Selector{LabelSelector: "a in (b"}},
	} {
		_, err := compileIgnoreRules([]kustomizev1.IgnoreRule{bad})
		var stalling *outcome.Stalling
		g.Expect(errors.As(err, &stalling)).To(BeTrue(), "%+v", bad)
		g.Expect(outcome.ReasonOf(err, "")).To(Equal(kustomizev1.ReconciliationFailedReason))
		g.Expect(err).To(MatchError(HavePrefix("spec.ignore[0]")))
	}
	rules, err := compileIgnoreRules([]kustomizev1.IgnoreRule{{Paths: []string{"/spec/replicas"}}})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(rules).NotTo(BeNil())
}

// TestIgnoredFieldsAreNotReverted: a field that spec.ignore names keeps the
// value another manager gave it, while the rest of the object is still
// corrected.
func TestIgnoredFieldsAreNotReverted(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.CreateNamespace(t)
	_, src := appRepo(t, "app", map[string]string{"deploy/a.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  namespace: " + ns +
		"\ndata:\n  managed: from-git\n  tuned: from-git\n"})
	applyManifests(g, ns, src)
	applyManifests(g, ns, kustomization("app", "app", "  path: ./deploy\n  ignore:\n  - paths: [\"/data/tuned\"]\n    target:\n      kind: ConfigMap\n"))
	key := client.ObjectKey{Namespace: ns, Name: "app"}
	waitForKs(g, key, ksReady(""))

	cm := &corev1.ConfigMap{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "a"}, cm)).To(Succeed())
	g.Expect(cm.Data).NotTo(HaveKey("tuned"), "an ignored field is not applied")
	cm.Data["tuned"] = "by-hand"
	cm.Data["managed"] = "by-hand"
	g.Expect(env.Client.Update(ctx, cm, client.FieldOwner("operator"))).To(Succeed())

	testutil.RequestReconcile(g, env.Client, &kustomizev1.Kustomization{ObjectMeta: objectMeta(ns, "app")}, "after-edit")
	g.Eventually(func() string {
		_ = env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "a"}, cm)
		return cm.Data["managed"]
	}, timeout, interval).Should(Equal("from-git"))
	g.Expect(cm.Data["tuned"]).To(Equal("by-hand"))
}
