package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	helmv2 "github.com/windlass-dev/windlass/api/helm/v2"
	kustomizev1 "github.com/windlass-dev/windlass/api/kustomize/v1"
	"github.com/windlass-dev/windlass/api/meta"
	sourcev1 "github.com/windlass-dev/windlass/api/source/v1"
	"github.com/windlass-dev/windlass/internal/conditions"
	"github.com/windlass-dev/windlass/internal/testutil"
	"github.com/windlass-dev/windlass/internal/testutil/helmtest"
)

// With --default-service-account, a Kustomization that names no service
// account applies and, when deleted, deletes what it applied as that
// service account of its namespace: without rights nothing is applied,
// and its finalizer waits until the service account may delete.
func TestKustomization_DefaultServiceAccountIsImpersonated(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.CreateNamespace(t)
	const shard, sa = "lockdown", "restricted"
	startShardController(t, g, shard, t.TempDir(), "--default-service-account", sa)
	g.Expect(env.Client.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: sa}})).To(Succeed())

	url, sha := servedRepo(t, "tenant.git", map[string]string{"deploy/a.yaml": configMapYAML(ns, "a")})
	createSharded(g, shard, &sourcev1.GitRepository{}, gitRepositoryYAML(ns, "app", url))
	ks := createSharded(g, shard, &kustomizev1.Kustomization{}, fmt.Sprintf(`
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata:
  name: app
  namespace: %s
spec:
  interval: 10m
  path: ./deploy
  prune: true
  sourceRef:
    kind: GitRepository
    name: app
`, ns))
	key := client.ObjectKeyFromObject(ks)
	user := "system:serviceaccount:" + ns + ":" + sa
	g.Eventually(func(g Gomega) {
		got := &kustomizev1.Kustomization{}
		g.Expect(env.Client.Get(ctx, key, got)).To(Succeed())
		g.Expect(conditions.IsFalse(got, meta.ReadyCondition)).To(BeTrue())
		g.Expect(conditions.Message(got, meta.ReadyCondition)).To(ContainSubstring(user))
	}, timeout, interval).Should(Succeed(), "an identity without rights is refused")
	g.Expect(apierrors.IsNotFound(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "a"}, &corev1.ConfigMap{}))).To(BeTrue())

	role := &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: sa},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "list", "create", "patch", "update"}}},
	}
	g.Expect(env.Client.Create(ctx, role)).To(Succeed())
	g.Expect(env.Client.Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: sa},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: sa},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: sa}},
	})).To(Succeed())
	testutil.RequestReconcile(g, env.Client, ks, "granted")
	waitApplied(g, key, "main@sha1:"+sha)
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "a"}, &corev1.ConfigMap{})).To(Succeed())

	// Deleting needs the service account's right to delete.
	g.Expect(env.Client.Delete(ctx, ks)).To(Succeed())
	g.Eventually(func() []string {
		return testutil.WarningReasons(g, env.Client, ks, kustomizev1.KustomizationKind)
	}, timeout, interval).Should(ContainElement(meta.PruneFailedReason))
	g.Consistently(func() error { return env.Client.Get(ctx, key, &kustomizev1.Kustomization{}) }, 2*time.Second, interval).
		Should(Succeed(), "the finalizer stays while the service account may not delete")
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "a"}, &corev1.ConfigMap{})).To(Succeed())
	g.Expect(testutil.EventMessages(g, env.Client, ks, kustomizev1.KustomizationKind)).To(ContainElement(ContainSubstring(user)))

	role.Rules[0].Verbs = append(role.Rules[0].Verbs, "delete")
	g.Expect(env.Client.Update(ctx, role)).To(Succeed())
	g.Eventually(func() bool {
		return apierrors.IsNotFound(env.Client.Get(ctx, key, &kustomizev1.Kustomization{}))
	}, timeout, interval).Should(BeTrue(), "the finalizer is removed once the deletion succeeds")
	g.Expect(apierrors.IsNotFound(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "a"}, &corev1.ConfigMap{}))).To(BeTrue())
}

// With --no-cross-namespace-refs, a Kustomization whose source lives in
// another namespace is Stalled with AccessDenied, while one whose source
// is in its own namespace applies.
func TestKustomization_NoCrossNamespaceRefs(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	tenant, shared := env.CreateNamespace(t), env.CreateNamespace(t)
	const shard = "no-cross-ns"
	startShardController(t, g, shard, t.TempDir(), "--no-cross-namespace-refs")

	url, sha := servedRepo(t, "lockdown.git", map[string]string{"deploy/a.yaml": configMapYAML(tenant, "a")})
	for _, ns := range []string{tenant, shared} {
		createSharded(g, shard, &sourcev1.GitRepository{}, gitRepositoryYAML(ns, "app", url))
	}
	ks := func(name, sourceNamespace string) *kustomizev1.Kustomization {
		return createSharded(g, shard, &kustomizev1.Kustomization{}, fmt.Sprintf(`
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata:
  name: %s
  namespace: %s
spec:
  interval: 10m
  path: ./deploy
  sourceRef:
    kind: GitRepository
    name: app
    namespace: %s
`, name, tenant, sourceNamespace))
	}
	cross, own := ks("cross", shared), ks("own", tenant)
	g.Eventually(func(g Gomega) {
		got := &kustomizev1.Kustomization{}
		g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(cross), got)).To(Succeed())
		g.Expect(conditions.IsTrue(got, meta.StalledCondition)).To(BeTrue())
		g.Expect(conditions.Reason(got, meta.ReadyCondition)).To(Equal(meta.AccessDeniedReason))
		g.Expect(conditions.Message(got, meta.ReadyCondition)).To(ContainSubstring("cross-namespace reference to GitRepository '" + shared + "/app'"))
	}, timeout, interval).Should(Succeed())
	waitApplied(g, client.ObjectKeyFromObject(own), "main@sha1:"+sha)
}

// With --default-service-account, a HelmRelease that names no service
// account installs and uninstalls as that service account of its
// namespace (security.md row 23, security-2 risk 7): without rights,
// nothing is installed and the refusal names the account; granted them,
// it installs; deleted while the account may not delete, its finalizer
// stays and so do the release's objects; once it may, the release and
// its records are gone.
func TestHelmRelease_DefaultServiceAccountIsImpersonated(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.CreateNamespace(t)
	const shard, sa = "helm-lockdown", "restricted"
	startShardController(t, g, shard, t.TempDir(), "--default-service-account", sa)
	g.Expect(env.Client.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: sa}})).To(Succeed())
	repo := helmtest.NewRepo(t)
	repo.Add(t, appChart(t, "1.0.0", "hello"))
	createSharded(g, shard, &sourcev1.HelmRepository{}, fmt.Sprintf(`
apiVersion: source.toolkit.fluxcd.io/v1
kind: HelmRepository
metadata:
  name: charts
  namespace: %s
spec:
  interval: 10m
  url: %s
`, ns, repo.URL()))
	hr := createSharded(g, shard, &helmv2.HelmRelease{}, fmt.Sprintf(`
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata:
  name: %s
  namespace: %s
spec:
  interval: 10m
  chart:
    spec:
      chart: app
      version: 1.0.0
      sourceRef:
        kind: HelmRepository
        name: charts
`, releaseName, ns))
	key := client.ObjectKeyFromObject(hr)
	user := "system:serviceaccount:" + ns + ":" + sa
	g.Eventually(func(g Gomega) {
		got := helmRelease(g, key)
		g.Expect(conditions.IsFalse(got, meta.ReadyCondition)).To(BeTrue())
		g.Expect(conditions.Message(got, meta.ReadyCondition)).To(ContainSubstring(user))
	}, timeout, interval).Should(Succeed(), "an identity without rights is refused")
	g.Expect(settings(g, ns)).To(BeNil(), "nothing is installed")

	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: sa},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps", "secrets"},
			Verbs: []string{"get", "list", "watch", "create", "patch", "update"}}}}
	g.Expect(env.Client.Create(ctx, role)).To(Succeed())
	g.Expect(env.Client.Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: sa},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: sa},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: sa}}})).To(Succeed())
	testutil.RequestReconcile(g, env.Client, hr, "granted")
	waitHelmRelease(g, key, deployedAt("1.0.0"))
	g.Expect(settings(g, ns)).To(HaveKeyWithValue("greeting", "hello"))

	// Uninstalling needs the service account's right to delete.
	g.Expect(env.Client.Delete(ctx, hr)).To(Succeed())
	g.Eventually(func() []string {
		return testutil.EventMessages(g, env.Client, hr, helmv2.HelmReleaseKind)
	}, timeout, interval).Should(ContainElement(ContainSubstring(user)), "the refused uninstall names the account")
	g.Consistently(func() error { return env.Client.Get(ctx, key, &helmv2.HelmRelease{}) }, 2*time.Second, interval).
		Should(Succeed(), "the finalizer stays while the service account may not delete")
	g.Expect(settings(g, ns)).NotTo(BeNil(), "the release's objects stay")

	role.Rules[0].Verbs = append(role.Rules[0].Verbs, "delete")
	g.Expect(env.Client.Update(ctx, role)).To(Succeed())
	g.Eventually(func() bool {
		return apierrors.IsNotFound(env.Client.Get(ctx, key, &helmv2.HelmRelease{}))
	}, timeout, interval).Should(BeTrue(), "the finalizer is removed once the uninstall succeeds")
	g.Expect(settings(g, ns)).To(BeNil())
	g.Expect(releaseRecords(g, ns)).To(BeEmpty())
}
