package testutil

import (
	"context"
	"time"

	. "github.com/onsi/gomega"
	authv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authentication/serviceaccount"
	"k8s.io/apiserver/pkg/authentication/user"
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
	waitForAccess(g, c, ns, authorizationv1.SubjectAccessReviewSpec{
		User:   serviceaccount.MakeUsername(saNamespace, sa),
		Groups: append(serviceaccount.MakeGroupNames(saNamespace), user.AllAuthenticated),
	}, rules)
}

// GrantRoleToUser creates, in ns, a Role named role with rules and binds
// it to the user called name (as an OpenID provider names them).
func GrantRoleToUser(g Gomega, c client.Client, ns, role, name string, rules ...rbacv1.PolicyRule) {
	grant(g, c, ns, role, rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: name}, rules)
	waitForAccess(g, c, ns, authorizationv1.SubjectAccessReviewSpec{User: name, Groups: []string{user.AllAuthenticated}}, rules)
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

// waitForAccess waits until the API server's authorizer allows who the
// first verb on the first resource of each rule in ns: its RBAC authorizer
// reads roles and bindings from a watch, so a binding just created may be
// unknown to it for a moment, and a server asked in that moment (and
// caching its refusal) would refuse the caller the test just granted.
func waitForAccess(g Gomega, c client.Client, ns string, who authorizationv1.SubjectAccessReviewSpec, rules []rbacv1.PolicyRule) {
	for _, rule := range rules {
		if len(rule.Verbs) == 0 || len(rule.Resources) == 0 || len(rule.APIGroups) == 0 {
			continue
		}
		spec := who
		spec.ResourceAttributes = &authorizationv1.ResourceAttributes{Namespace: ns,
			Verb: rule.Verbs[0], Group: rule.APIGroups[0], Resource: rule.Resources[0]}
		g.Eventually(func() (bool, error) {
			review := &authorizationv1.SubjectAccessReview{Spec: spec}
			if err := c.Create(context.Background(), review); err != nil {
				return false, err
			}
			return review.Status.Allowed, nil
		}, time.Minute, 50*time.Millisecond).Should(BeTrue(), "the API server allows %s to %s %s", spec.User, spec.ResourceAttributes.Verb, spec.ResourceAttributes.Resource)
	}
}
