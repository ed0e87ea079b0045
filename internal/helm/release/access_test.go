package release

import (
	"context"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/windlass-dev/windlass/internal/testutil"
)

// grant gives the service account sa of namespace ns the rules in
// namespace where.
func grant(t *testing.T, where, ns, sa string, rules ...rbacv1.PolicyRule) {
	t.Helper()
	g := NewWithT(t)
	ctx := context.Background()
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: where, GenerateName: sa + "-"}, Rules: rules}
	g.Expect(env.Client.Create(ctx, role)).To(Succeed())
	g.Expect(env.Client.Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: where, Name: role.Name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role.Name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: sa}},
	})).To(Succeed())
}

// runnerAs returns a Runner of f's storage namespace that acts as the
// service account sa of f's storage namespace.
func (f *fixture) runnerAs(t *testing.T, sa string) *Runner {
	t.Helper()
	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:" + f.storage + ":" + sa}
	getter, err := NewGetter(cfg)
	if err != nil {
		t.Fatal(err)
	}
	r, err := New(getter, f.storage, WithSandbox(testSandbox(t)))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestCheckUpgradeAccess(t *testing.T) {
	secrets := rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"*"}}
	readConfigMaps := rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "list"}}
	patchConfigMaps := rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "patch"}}
	addConfigMaps := rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "patch", "create"}}
	tests := []struct {
		name string
		// setup grants rights and returns the runner to check with.
		setup func(t *testing.T, f *fixture) *Runner
		// next is the manifest to upgrade to: the release's own when empty.
		next    string
		wantErr string
	}{
		{
			name:  "the controller's identity",
			setup: func(_ *testing.T, f *fixture) *Runner { return f.runner },
		},
		{
			name: "a service account that may write the records and patch the objects",
			setup: func(t *testing.T, f *fixture) *Runner {
				grant(t, f.storage, f.storage, "deployer", secrets)
				grant(t, f.target, f.storage, "deployer", patchConfigMaps)
				return f.runnerAs(t, "deployer")
			},
		},
		{
			name: "a service account that may only read the objects",
			setup: func(t *testing.T, f *fixture) *Runner {
				grant(t, f.storage, f.storage, "reader", secrets)
				grant(t, f.target, f.storage, "reader", readConfigMaps)
				return f.runnerAs(t, "reader")
			},
			wantErr: "the identity may not patch ConfigMap <target>/app-cm",
		},
		{
			name: "a service account that may not write the records",
			setup: func(t *testing.T, f *fixture) *Runner {
				grant(t, f.target, f.storage, "outsider", patchConfigMaps)
				return f.runnerAs(t, "outsider")
			},
			wantErr: "the identity may not create the release's records (Secrets) in namespace <storage>",
		},
		{
			name: "a service account that may not create an object the upgrade adds",
			setup: func(t *testing.T, f *fixture) *Runner {
				grant(t, f.storage, f.storage, "patcher", secrets)
				grant(t, f.target, f.storage, "patcher", patchConfigMaps)
				return f.runnerAs(t, "patcher")
			},
			next:    configMapYAML("app-cm") + configMapYAML("app-extra"),
			wantErr: "the identity may not create ConfigMap <target>/app-extra",
		},
		{
			name: "a service account that may not delete an object the upgrade drops",
			setup: func(t *testing.T, f *fixture) *Runner {
				grant(t, f.storage, f.storage, "adder", secrets)
				grant(t, f.target, f.storage, "adder", addConfigMaps)
				return f.runnerAs(t, "adder")
			},
			next:    configMapYAML("app-other"),
			wantErr: "the identity may not delete ConfigMap <target>/app-cm",
		},
		{
			name: "a service account that may make every change of the upgrade",
			setup: func(t *testing.T, f *fixture) *Runner {
				grant(t, f.storage, f.storage, "owner", secrets)
				grant(t, f.target, f.storage, "owner", rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"*"}})
				return f.runnerAs(t, "owner")
			},
			next: configMapYAML("app-other"),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			f := newFixture(t)
			rel := f.install(t, "app", basicChart(t, "1.0.0"), map[string]any{"greeting": "one"})
			run := tt.setup(t, f)
			check := func() error { return run.CheckUpgradeAccess(context.Background(), rel, tt.next) }
			// Roles reach the authorizer moments after they are made.
			if tt.wantErr == "" {
				g.Eventually(check, testutil.WaitTimeout, 100*time.Millisecond).Should(Succeed())
				return
			}
			want := strings.NewReplacer("<target>", f.target, "<storage>", f.storage).Replace(tt.wantErr)
			g.Eventually(check, testutil.WaitTimeout, 100*time.Millisecond).Should(MatchError(want))
		})
	}
}

// configMapYAML is a manifest document of a ConfigMap without a namespace.
func configMapYAML(name string) string {
	return "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: " + name + "\ndata: {}\n"
}
