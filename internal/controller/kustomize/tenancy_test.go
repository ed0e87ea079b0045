package kustomize

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kustomizev1 "github.com/windlass-dev/windlass/api/kustomize/v1"
	"github.com/windlass-dev/windlass/api/meta"
	"github.com/windlass-dev/windlass/internal/conditions"
	"github.com/windlass-dev/windlass/internal/testutil"
)

func TestServiceAccountImpersonation(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.CreateNamespace(t)
	_, src := appRepo(t, "app", map[string]string{"deploy/a.yaml": configMap(ns, "a", "1")})
	applyManifests(g, ns, src)
	g.Expect(env.Client.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "tenant", Namespace: ns}})).To(Succeed())
	applyManifests(g, ns, kustomization("app", "app", "  path: ./deploy\n  serviceAccountName: tenant\n"))
	key := client.ObjectKey{Namespace: ns, Name: "app"}

	got := waitForKs(g, key, ksReason("False", kustomizev1.ValidationFailedReason))
	g.Expect(conditions.Message(got, meta.ReadyCondition)).To(ContainSubstring("system:serviceaccount:" + ns + ":tenant"))

	g.Expect(env.Client.Create(ctx, &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Name: "tenant", Namespace: ns},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"*"}}},
	})).To(Succeed())
	g.Expect(env.Client.Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "tenant", Namespace: ns},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "tenant"},
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: "tenant", Namespace: ns}},
	})).To(Succeed())
	testutil.RequestReconcile(g, env.Client, &kustomizev1.Kustomization{ObjectMeta: objectMeta(ns, "app")}, "granted")
	waitForKs(g, key, ksReady(""))
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "a"}, &corev1.ConfigMap{})).To(Succeed())
}

// TestRemoteClusterKubeconfig applies to a remote cluster from a static
// kubeconfig, and refuses, as Stalled with the field named, kubeconfigs
// that run a command, read the controller's files or skip TLS checks:
// nothing runs and no file's content leaves the controller.
func TestRemoteClusterKubeconfig(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.CreateNamespace(t)
	_, src := appRepo(t, "app", map[string]string{"deploy/a.yaml": configMap(ns, "remote", "1")})
	applyManifests(g, ns, src)

	file, err := env.KubeconfigFile(t.TempDir())
	g.Expect(err).NotTo(HaveOccurred())
	static, err := os.ReadFile(file)
	g.Expect(err).NotTo(HaveOccurred())
	dir := t.TempDir()
	marker := filepath.Join(dir, "pwned")
	const canary = "canary-token-5f1e9c"
	tokenFile := filepath.Join(dir, "token")
	g.Expect(os.WriteFile(tokenFile, []byte(canary), 0o600)).To(Succeed())

	refused := []struct{ name, user, cluster, message string }{
		{"exec", "    exec:\n      apiVersion: client.authentication.k8s.io/v1\n      command: /bin/sh\n      args: [\"-c\", \"touch " + marker + "\"]\n",
			"", "user 'u': exec is refused"},
		{"token-file", "    tokenFile: " + tokenFile + "\n", "", "user 'u': tokenFile is refused"},
		{"client-key-file", "    client-certificate: " + tokenFile + "\n    client-key: " + tokenFile + "\n", "", "user 'u': client-certificate is refused"},
		{"ca-file", "    token: abc\n", "    certificate-authority: " + tokenFile + "\n", "cluster 'c': certificate-authority is refused"},
		{"insecure-tls", "    token: abc\n", "    insecure-skip-tls-verify: true\n", "cluster 'c': insecure-skip-tls-verify is refused"},
	}
	for _, tt := range refused {
		data := "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: " + env.Config.Host + "\n" + tt.cluster +
			"contexts:\n- name: c\n  context: {cluster: c, user: u}\ncurrent-context: c\nusers:\n- name: u\n  user:\n" + tt.user
		g.Expect(env.Client.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: tt.name, Namespace: ns},
			Data: map[string][]byte{"value": []byte(data)}})).To(Succeed())
		applyManifests(g, ns, kustomization(tt.name, "app", "  path: ./deploy\n  kubeConfig:\n    secretRef:\n      name: "+tt.name+"\n"))
	}
	for _, tt := range refused {
		obj := &kustomizev1.Kustomization{ObjectMeta: objectMeta(ns, tt.name)}
		got := waitForKs(g, client.ObjectKeyFromObject(obj), func(k *kustomizev1.Kustomization) bool {
			return conditions.IsTrue(k, meta.StalledCondition)
		})
		g.Expect(conditions.Message(got, meta.ReadyCondition)).To(ContainSubstring(tt.message), tt.name)
		g.Expect(conditions.Message(got, meta.ReadyCondition)).NotTo(ContainSubstring(tokenFile), "the path is not echoed")
		g.Expect(testutil.EventMessages(g, env.Client, obj, kustomizev1.KustomizationKind)).NotTo(ContainElement(ContainSubstring(canary)))
	}
	g.Consistently(func() bool { _, err := os.Stat(marker); return err == nil }, "2s", "200ms").Should(BeFalse(), "the exec plugin never ran")
	g.Expect(logs.String()).NotTo(ContainSubstring(canary), "the token file's content never reaches the logs")

	g.Expect(env.Client.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "static", Namespace: ns},
		Data: map[string][]byte{"value": static}})).To(Succeed())
	applyManifests(g, ns, kustomization("static", "app", "  path: ./deploy\n  kubeConfig:\n    secretRef:\n      name: static\n"))
	waitForKs(g, client.ObjectKey{Namespace: ns, Name: "static"}, ksReady(""))
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "remote"}, &corev1.ConfigMap{})).To(Succeed())
}
