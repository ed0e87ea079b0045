package kustomize

import (
	"context"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kustomizev1 "github.com/windlass-dev/windlass/api/kustomize/v1"
	"github.com/windlass-dev/windlass/api/meta"
	sourcev1 "github.com/windlass-dev/windlass/api/source/v1"
	"github.com/windlass-dev/windlass/internal/conditions"
	"github.com/windlass-dev/windlass/internal/testutil"
	"github.com/windlass-dev/windlass/internal/testutil/testenv"
)

// protectedConfigMap is a ConfigMap that env.DenyProtectedDeletes protects.
func protectedConfigMap(ns, name string) string {
	return "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: " + name + "\n  namespace: " + ns +
		"\n  labels:\n    " + testenv.ProtectedLabel + ": \"true\"\ndata:\n  value: \"1\"\n"
}

// TestPruneRefusedKeepsTheObjectInTheInventory removes an object from the
// source while an admission policy refuses its deletion: the Kustomization
// says so, keeps the object in its inventory and retries, and prunes it once
// the policy is gone (security.md row 35).
func TestPruneRefusedKeepsTheObjectInTheInventory(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.CreateNamespace(t)
	allow := env.DenyProtectedDeletes(t, ns)
	repo, src := appRepo(t, "app", map[string]string{
		"deploy/kept.yaml":      configMap(ns, "kept", "1"),
		"deploy/protected.yaml": protectedConfigMap(ns, "protected"),
	})
	applyManifests(g, ns, src)
	applyManifests(g, ns, kustomization("app", "app", "  path: ./deploy\n"))
	key := client.ObjectKey{Namespace: ns, Name: "app"}
	waitForKs(g, key, ksReady(""))
	protectedID := ns + "_protected__ConfigMap"

	sha, err := repo.Remove("main", []string{"deploy/protected.yaml"}, "drop the protected ConfigMap")
	g.Expect(err).NotTo(HaveOccurred())
	testutil.RequestReconcile(g, env.Client, &sourcev1.GitRepository{ObjectMeta: objectMeta(ns, "app")}, "drop")

	got := waitForKs(g, key, ksReason("False", meta.PruneFailedReason))
	g.Expect(conditions.Message(got, meta.ReadyCondition)).To(ContainSubstring("deletion of protected objects is not allowed"))
	g.Expect(got.Status.LastAttemptedRevision).To(Equal("main@sha1:" + sha))
	g.Expect(inventoryIDs(got)).To(ContainElements(protectedID, ns+"_kept__ConfigMap"))
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "protected"}, &corev1.ConfigMap{})).To(Succeed())
	g.Eventually(func() []string {
		return testutil.WarningReasons(g, env.Client, &kustomizev1.Kustomization{ObjectMeta: objectMeta(ns, "app")}, kustomizev1.KustomizationKind)
	}, timeout, interval).Should(ContainElement(meta.PruneFailedReason))

	// The refusal persists across retries: the object stays in the inventory.
	g.Consistently(func(g Gomega) {
		k := &kustomizev1.Kustomization{}
		g.Expect(env.Client.Get(ctx, key, k)).To(Succeed())
		g.Expect(conditions.Reason(k, meta.ReadyCondition)).To(Equal(meta.PruneFailedReason))
		g.Expect(inventoryIDs(k)).To(ContainElement(protectedID))
	}, 2*time.Second, interval).Should(Succeed())

	allow()
	got = waitForKs(g, key, ksReady("main@sha1:"+sha))
	g.Expect(inventoryIDs(got)).To(ConsistOf(ns + "_kept__ConfigMap"))
	g.Eventually(func() bool {
		return apierrors.IsNotFound(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "protected"}, &corev1.ConfigMap{}))
	}, timeout, interval).Should(BeTrue())
}

func widget(group, ns, name string) string {
	return "apiVersion: " + group + "/v1\nkind: Widget\nmetadata:\n  name: " + name + "\n  namespace: " + ns + "\nspec:\n  size: 3\n"
}

// TestCRDAndItsObjectsInOneRevision applies a CRD and an object of its kind
// from one revision (the CRD first, then the object once the kind is
// served), then a revision without either: both are pruned, although the
// kind is gone by the time the object would be deleted (security.md row 36).
func TestCRDAndItsObjectsInOneRevision(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.CreateNamespace(t)
	group := ns + ".windlass.test"
	repo, src := appRepo(t, "app", map[string]string{
		"deploy/crd.yaml":    testenv.WidgetCRD(group),
		"deploy/widget.yaml": widget(group, ns, "small"),
		"deploy/cm.yaml":     configMap(ns, "kept", "1"),
	})
	applyManifests(g, ns, src)
	applyManifests(g, ns, kustomization("app", "app", "  path: ./deploy\n  wait: true\n  timeout: 1m\n"))
	key := client.ObjectKey{Namespace: ns, Name: "app"}
	got := waitForKs(g, key, ksReady(""))
	g.Expect(inventoryIDs(got)).To(ConsistOf(
		"_widgets."+group+"_apiextensions.k8s.io_CustomResourceDefinition",
		ns+"_small_"+group+"_Widget",
		ns+"_kept__ConfigMap",
	))
	w := &unstructured.Unstructured{}
	w.SetAPIVersion(group + "/v1")
	w.SetKind("Widget")
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "small"}, w)).To(Succeed())

	sha, err := repo.Remove("main", []string{"deploy/crd.yaml", "deploy/widget.yaml"}, "drop the widgets")
	g.Expect(err).NotTo(HaveOccurred())
	testutil.RequestReconcile(g, env.Client, &sourcev1.GitRepository{ObjectMeta: objectMeta(ns, "app")}, "drop")
	got = waitForKs(g, key, ksReady("main@sha1:"+sha))
	g.Expect(inventoryIDs(got)).To(ConsistOf(ns + "_kept__ConfigMap"))
	g.Eventually(func() bool {
		return apierrors.IsNotFound(env.Client.Get(ctx, client.ObjectKey{Name: "widgets." + group}, &apiextensionsv1.CustomResourceDefinition{}))
	}, timeout, interval).Should(BeTrue())
}

// inventoryIDs returns the IDs of k's status inventory.
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

// TestPruneWhileWaitingForHealth removes an object from the source in the
// revision that also changes a Deployment, with wait: the object is pruned
// and leaves the inventory while the Deployment becomes healthy, and later
// runs do not wait for it.
func TestPruneWhileWaitingForHealth(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.CreateNamespace(t)
	repo, src := appRepo(t, "app", map[string]string{
		"deploy/web.yaml": deployment(ns, "web"),
		"deploy/old.yaml": configMap(ns, "old", "1"),
	})
	applyManifests(g, ns, src)
	applyManifests(g, ns, kustomization("app", "app", "  path: ./deploy\n  prune: true\n  wait: true\n  timeout: 1m\n"))
	key := client.ObjectKey{Namespace: ns, Name: "app"}
	waitForKs(g, key, ksReady(""))

	_, err := repo.Remove("main", []string{"deploy/old.yaml"}, "drop the old ConfigMap")
	g.Expect(err).NotTo(HaveOccurred())
	changed := strings.Replace(deployment(ns, "web"), ":1.0.0", ":1.0.1", 1)
	sha := repo.MustCommit(t, "main", map[string]string{"deploy/web.yaml": changed}, "new image")
	testutil.RequestReconcile(g, env.Client, &sourcev1.GitRepository{ObjectMeta: objectMeta(ns, "app")}, "next")
	got := waitForKs(g, key, ksReady("main@sha1:"+sha))
	g.Expect(inventoryIDs(got)).To(ConsistOf(ns + "_web_apps_Deployment"))
	g.Expect(apierrors.IsNotFound(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "old"}, &corev1.ConfigMap{}))).To(BeTrue())

	// A later run checks the objects of the inventory, all there.
	testutil.RequestReconcile(g, env.Client, &kustomizev1.Kustomization{ObjectMeta: objectMeta(ns, "app")}, "again")
	got = waitForKs(g, key, func(k *kustomizev1.Kustomization) bool {
		return k.Status.LastHandledReconcileAt == "again" && ksReady("main@sha1:"+sha)(k)
	})
	g.Expect(inventoryIDs(got)).To(ConsistOf(ns + "_web_apps_Deployment"))
}
