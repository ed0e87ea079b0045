package kustomize

import (
	"context"
	"errors"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kustomizev1 "github.com/windlass-dev/windlass/api/kustomize/v1"
	"github.com/windlass-dev/windlass/internal/reconcile"
	"github.com/windlass-dev/windlass/internal/testutil"
)

func TestApplyIgnoreRules(t *testing.T) {
	deploy := func() *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "apps/v1", "kind": "Deployment",
			"metadata": map[string]any{"name": "web", "namespace": "prod", "labels": map[string]any{"tier": "front"},
				"annotations": map[string]any{"a/b": "x"}},
			"spec": map[string]any{"replicas": int64(2), "template": map[string]any{"spec": map[string]any{
				"containers": []any{map[string]any{"name": "app", "image": "app:1"}}}}},
		}}
	}
	tests := []struct {
		name    string
		rule    kustomizev1.IgnoreRule
		removed bool
	}{
		{"any object", kustomizev1.IgnoreRule{Paths: []string{"/spec/replicas"}}, true},
		{"by kind and group", kustomizev1.IgnoreRule{Paths: []string{"/spec/replicas"}, Target: &kustomizev1.Selector{Group: "apps", Kind: "Deployment"}}, true},
		{"other kind", kustomizev1.IgnoreRule{Paths: []string{"/spec/replicas"}, Target: &kustomizev1.Selector{Kind: "StatefulSet"}}, false},
		{"name regexp", kustomizev1.IgnoreRule{Paths: []string{"/spec/replicas"}, Target: &kustomizev1.Selector{Name: "we.*"}}, true},
		{"name is anchored", kustomizev1.IgnoreRule{Paths: []string{"/spec/replicas"}, Target: &kustomizev1.Selector{Name: "we"}}, false},
		{"labels", kustomizev1.IgnoreRule{Paths: []string{"/spec/replicas"}, Target: &kustomizev1.Selector{LabelSelector: "tier=front"}}, true},
		{"annotations", kustomizev1.IgnoreRule{Paths: []string{"/spec/replicas"}, Target: &kustomizev1.Selector{AnnotationSelector: "a/b=y"}}, false},
		{"missing path", kustomizev1.IgnoreRule{Paths: []string{"/spec/nothing/here"}}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			rules, err := compileIgnoreRules([]kustomizev1.IgnoreRule{tt.rule})
			g.Expect(err).NotTo(HaveOccurred())
			obj := deploy()
			rules.Apply([]*unstructured.Unstructured{obj})
			_, found, _ := unstructured.NestedInt64(obj.Object, "spec", "replicas")
			g.Expect(found).To(Equal(!tt.removed))
		})
	}

	g := NewWithT(t)
	rules, err := compileIgnoreRules([]kustomizev1.IgnoreRule{{Paths: []string{"/spec/template/spec/containers/0/image", "/metadata/annotations/a~1b"}}})
	g.Expect(err).NotTo(HaveOccurred())
	obj := deploy()
	rules.Apply([]*unstructured.Unstructured{obj})
	containers, _, _ := unstructured.NestedSlice(obj.Object, "spec", "template", "spec", "containers")
	g.Expect(containers[0]).To(Equal(map[string]any{"name": "app"}))
	g.Expect(obj.GetAnnotations()).To(BeEmpty())

	for _, bad := range []kustomizev1.IgnoreRule{
		{Paths: []string{"spec/replicas"}},
		{Paths: []string{"/x"}, Target: &kustomizev1.Selector{Name: "("}},
		{Paths: []string{"/x"}, Target: &kustomizev1.Selector{LabelSelector: "a in (b"}},
	} {
		_, err := compileIgnoreRules([]kustomizev1.IgnoreRule{bad})
		var stalling *reconcile.Stalling
		g.Expect(errors.As(err, &stalling)).To(BeTrue(), "%+v", bad)
	}
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
