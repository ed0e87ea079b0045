package kustomize

import (
	"context"
	"os"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kustomizev1 "github.com/windlass-dev/windlass/api/kustomize/v1"
	"github.com/windlass-dev/windlass/api/meta"
	"github.com/windlass-dev/windlass/internal/conditions"
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
	requestReconcile(g, &kustomizev1.Kustomization{ObjectMeta: objectMeta(ns, "app")}, "granted")
	waitForKs(g, key, ksReady(""))
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "a"}, &corev1.ConfigMap{})).To(Succeed())
}

func TestRemoteClusterKubeconfig(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.CreateNamespace(t)
	_, src := appRepo(t, "app", map[string]string{"deploy/a.yaml": configMap(ns, "remote", "1")})
	applyManifests(g, ns, src)

	file, err := env.KubeconfigFile(t.TempDir())
	g.Expect(err).NotTo(HaveOccurred())
	kubeconfig, err := os.ReadFile(file)
	g.Expect(err).NotTo(HaveOccurred())
	execConfig := []byte(`apiVersion: v1
kind: Config
clusters:
- name: c
  cluster:
    server: https://127.0.0.1:1
contexts:
- name: c
  context: {cluster: c, user: u}
current-context: c
users:
- name: u
  user:
    exec:
      apiVersion: client.authentication.k8s.io/v1
      command: /bin/sh
      args: ["-c", "touch /tmp/pwned"]
`)
	for name, data := range map[string][]byte{"static": kubeconfig, "exec": execConfig} {
		g.Expect(env.Client.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			Data: map[string][]byte{"value": data}})).To(Succeed())
	}

	applyManifests(g, ns, kustomization("exec", "app", "  path: ./deploy\n  kubeConfig:\n    secretRef:\n      name: exec\n"))
	got := waitForKs(g, client.ObjectKey{Namespace: ns, Name: "exec"}, func(k *kustomizev1.Kustomization) bool {
		return conditions.IsTrue(k, meta.StalledCondition)
	})
	g.Expect(conditions.Message(got, meta.ReadyCondition)).To(ContainSubstring("runs a command to authenticate, which is refused"))

	applyManifests(g, ns, kustomization("static", "app", "  path: ./deploy\n  kubeConfig:\n    secretRef:\n      name: static\n"))
	waitForKs(g, client.ObjectKey{Namespace: ns, Name: "static"}, ksReady(""))
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "remote"}, &corev1.ConfigMap{})).To(Succeed())
}
