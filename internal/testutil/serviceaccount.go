package testutil

import (
	"context"

	. "github.com/onsi/gomega"
	authv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ServiceAccountToken creates the service account ns/name, unless it
// exists, with the client of cfg (an administrator's), and returns a token
// the API server issued for it.
func ServiceAccountToken(g Gomega, cfg *rest.Config, ns, name string) string {
	ctx := context.Background()
	cs, err := kubernetes.NewForConfig(cfg)
	g.Expect(err).NotTo(HaveOccurred())
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	if _, err := cs.CoreV1().ServiceAccounts(ns).Create(ctx, sa, metav1.CreateOptions{}); client.IgnoreAlreadyExists(err) != nil {
		g.Expect(err).NotTo(HaveOccurred())
	}
	tr, err := cs.CoreV1().ServiceAccounts(ns).CreateToken(ctx, name, &authv1.TokenRequest{}, metav1.CreateOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(tr.Status.Token).NotTo(BeEmpty())
	return tr.Status.Token
}

// TokenConfig returns a rest config for the cluster of cfg that
// authenticates with token alone, as a kubeconfig with a token does.
func TokenConfig(cfg *rest.Config, token string) *rest.Config {
	return &rest.Config{Host: cfg.Host, TLSClientConfig: rest.TLSClientConfig{CAData: cfg.CAData}, BearerToken: token}
}

// GrantRole creates, in ns, a Role named name with rules and binds it to
// the service account saNamespace/sa.
func GrantRole(g Gomega, c client.Client, ns, name, saNamespace, sa string, rules ...rbacv1.PolicyRule) {
	grant(g, c, ns, name, rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Namespace: saNamespace, Name: sa}, rules)
}

// GrantRoleToUser creates, in ns, a Role named name with rules and binds
// it to the user of that name (as an OpenID provider names them).
func GrantRoleToUser(g Gomega, c client.Client, ns, name, user string, rules ...rbacv1.PolicyRule) {
	grant(g, c, ns, name, rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}, rules)
}

// grant creates, in ns, a Role named name with rules and binds it to
// subject.
func grant(g Gomega, c client.Client, ns, name string, subject rbacv1.Subject, rules []rbacv1.PolicyRule) {
	ctx := context.Background()
	g.Expect(c.Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Rules: rules})).To(Succeed())
	g.Expect(c.Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name},
		Subjects: []rbacv1.Subject{subject}})).To(Succeed())
}
