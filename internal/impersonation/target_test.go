package impersonation

import (
	"context"
	"os"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/windlass-dev/windlass/internal/testutil/testenv"
)

var env *testenv.Environment

func TestMain(m *testing.M) {
	os.Exit(testenv.Run(m, &env))
}

func newFactory() *Factory {
	return &Factory{Config: env.Config, Scheme: env.Scheme, Mapper: env.Client.RESTMapper()}
}

func TestFactoryLocalTargetIsSharedSafely(t *testing.T) {
	g := NewWithT(t)
	f := newFactory()
	type outcome struct {
		target *Target
		err    error
	}
	targets := make(chan outcome, 8)
	for range 8 {
		go func() {
			tgt, err := f.For(context.Background(), Identity{Namespace: "default"}, env.Client)
			targets <- outcome{tgt, err}
		}()
	}
	first := <-targets
	g.Expect(first.err).NotTo(HaveOccurred())
	for range 7 {
		next := <-targets
		g.Expect(next.err).NotTo(HaveOccurred())
		g.Expect(next.target).To(BeIdenticalTo(first.target))
	}
}

func TestFactoryCachesTargetsPerIdentity(t *testing.T) {
	g := NewWithT(t)
	f := newFactory()
	forSA := func(ns, sa string) *Target {
		tgt, err := f.For(context.Background(), Identity{Namespace: ns, ServiceAccountName: sa}, env.Client)
		g.Expect(err).NotTo(HaveOccurred())
		return tgt
	}
	a := forSA("team-a", "deployer")
	g.Expect(a.Identity).To(Equal("local/team-a/deployer"))
	g.Expect(forSA("team-a", "deployer")).To(BeIdenticalTo(a))
	g.Expect(forSA("team-b", "deployer")).NotTo(BeIdenticalTo(a))
	g.Expect(forSA("team-b", "deployer").Identity).NotTo(Equal(a.Identity))
	g.Expect(forSA("team-a", "other")).NotTo(BeIdenticalTo(a))

	f.DefaultServiceAccount = "restricted"
	g.Expect(forSA("team-a", "")).To(BeIdenticalTo(forSA("team-a", "restricted")), "the default service account is impersonated")
}

// TestImpersonatedTargetActsAsTheServiceAccount writes through the target
// of an object that names no service account while a default one is set:
// the API server sees the default service account, which may do nothing
// until it is granted a role.
func TestImpersonatedTargetActsAsTheServiceAccount(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.CreateNamespace(t)
	f := newFactory()
	f.DefaultServiceAccount = "restricted"
	tgt, err := f.For(ctx, Identity{Namespace: ns}, env.Client)
	g.Expect(err).NotTo(HaveOccurred())

	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "app"}}
	err = tgt.Client.Create(ctx, cm.DeepCopy())
	g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "an identity without rights is refused: %v", err)
	g.Expect(err.Error()).To(ContainSubstring(ServiceAccountUser(ns, "restricted")))

	role := &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "configmaps"},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"*"}}},
	}
	binding := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "restricted"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role.Name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: "restricted"}},
	}
	g.Expect(env.Client.Create(ctx, role)).To(Succeed())
	g.Expect(env.Client.Create(ctx, binding)).To(Succeed())
	g.Eventually(func() error { return tgt.Client.Create(ctx, cm.DeepCopy()) }, "10s", "100ms").Should(Succeed())
	g.Expect(tgt.Client.Delete(ctx, cm)).To(Succeed())
	other := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "s"}}
	g.Expect(apierrors.IsForbidden(tgt.Client.Create(ctx, other))).To(BeTrue(), "the role grants ConfigMaps only")
}
