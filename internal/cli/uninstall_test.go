package cli

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kustomizev1 "github.com/windlass-dev/windlass/api/kustomize/v1"
	"github.com/windlass-dev/windlass/api/meta"
)

// appliedByKustomization creates a ConfigMap in a namespace of its own and
// a Kustomization in ns that holds the Windlass finalizer and lists the
// ConfigMap in its inventory, as if it had applied it (no controller
// reconciles it: it is not labelled for the tests' controllers).
func appliedByKustomization(t *testing.T, g *WithT, ns string) (*corev1.ConfigMap, *kustomizev1.Kustomization) {
	ctx := context.Background()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: env.CreateNamespace(t), Name: "app",
		Labels: map[string]string{"kustomize.toolkit.fluxcd.io/name": "apps", "kustomize.toolkit.fluxcd.io/namespace": ns}}}
	g.Expect(env.Client.Create(ctx, cm)).To(Succeed())
	ks := &kustomizev1.Kustomization{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "apps", Finalizers: []string{meta.Finalizer}},
		Spec: kustomizev1.KustomizationSpec{Interval: metav1.Duration{Duration: time.Hour}, Prune: true,
			SourceRef: kustomizev1.CrossNamespaceSourceReference{Kind: "GitRepository", Name: "apps"}},
	}
	g.Expect(env.Client.Create(ctx, ks)).To(Succeed())
	ks.Status.Inventory = &kustomizev1.ResourceInventory{Entries: []kustomizev1.ResourceRef{{ID: cm.Namespace + "_app__ConfigMap", Version: "v1"}}}
	g.Expect(env.Client.Status().Update(ctx, ks)).To(Succeed())
	t.Cleanup(func() {
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(ks), ks); err == nil {
			ks.Finalizers = nil
			_ = env.Client.Update(ctx, ks)
		}
	})
	return cm, ks
}

func TestUninstall(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns, _, _ := installForTest(t, g)
	cm, ks := appliedByKustomization(t, g, ns)

	out, _, err := run(t, "uninstall", "--dry-run", "--keep-namespace", "--keep-crds", "-n", ns)
	g.Expect(err).NotTo(HaveOccurred())
	expectGolden(t, g, "uninstall-dry-run", strings.ReplaceAll(out, ns, "NAMESPACE"))
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "windlass"}, &appsv1.Deployment{})).To(Succeed())

	out, _, err = run(t, "uninstall", "--silent", "--keep-namespace", "--keep-crds", "-n", ns)
	g.Expect(err).NotTo(HaveOccurred())
	expectGolden(t, g, "uninstall-keep-crds", strings.ReplaceAll(out, ns, "NAMESPACE"))

	for _, obj := range []client.Object{
		&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "windlass"}},
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "source-controller"}},
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "windlass-controller-" + ns}},
		&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "windlass-controller-" + ns}},
	} {
		err := env.Client.Get(ctx, client.ObjectKeyFromObject(obj), obj)
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "%T %s: %v", obj, obj.GetName(), err)
	}
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(cm), cm)).To(Succeed(), "what the Kustomization applied stays")
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(ks), ks)).To(Succeed(), "the CRDs were kept")
	g.Expect(ks.Finalizers).To(BeEmpty())
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Name: ns}, &corev1.Namespace{})).To(Succeed())
}

func TestUninstallAsksFirst(t *testing.T) {
	g := NewWithT(t)
	ns, _, _ := installForTest(t, g)
	for _, answer := range []string{"n\n", ""} {
		var out, errOut bytes.Buffer
		root := NewRootCommand(&out, &errOut)
		root.SetIn(strings.NewReader(answer))
		root.SetArgs([]string{"uninstall", "-n", ns, "--kubeconfig", kubeconfig})
		err := root.Execute()
		g.Expect(err).To(MatchError(ContainSubstring("Windlass was not uninstalled")))
		g.Expect(errOut.String()).To(HavePrefix("Delete the Windlass controllers of namespace " + ns +
			", the CRDs with every Windlass object of the cluster, and the namespace " + ns +
			" (what the Kustomizations and HelmReleases applied stays)? [y/N] "))
		g.Expect(env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "windlass"}, &appsv1.Deployment{})).To(Succeed())
	}
}

func TestUninstallNeedsAnInstallation(t *testing.T) {
	g := NewWithT(t)
	ns := env.CreateNamespace(t)
	_, _, err := run(t, "uninstall", "--silent", "-n", ns)
	g.Expect(err).To(MatchError(ContainSubstring("Windlass is not installed in namespace " + ns + ": nothing was uninstalled")))
	g.Expect(env.Client.Get(context.Background(), client.ObjectKey{Name: ns}, &corev1.Namespace{})).To(Succeed())
}
