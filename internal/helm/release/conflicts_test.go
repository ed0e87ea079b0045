package release

import (
	"context"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// applyAsOther sets data.greeting of the ConfigMap name in the target
// namespace with server-side apply as the field manager "other" (as the
// helm CLI or kubectl would), so that it owns the field.
func (f *fixture) applyAsOther(t *testing.T, name, greeting string) {
	t.Helper()
	cm := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": name, "namespace": f.target},
		"data":     map[string]any{"greeting": greeting},
	}}
	if err := env.Client.Apply(context.Background(), client.ApplyConfigurationFromUnstructured(cm),
		client.FieldOwner("other"), client.ForceOwnership); err != nil {
		t.Fatalf("applying ConfigMap %s as another field manager: %v", name, err)
	}
}

// greetingManagers returns the field managers of data.greeting of the
// ConfigMap name in the target namespace.
func (f *fixture) greetingManagers(g Gomega, name string) []string {
	cm := &corev1.ConfigMap{}
	g.Expect(env.Client.Get(context.Background(), client.ObjectKey{Namespace: f.target, Name: name}, cm)).To(Succeed())
	var managers []string
	for _, m := range cm.ManagedFields {
		if m.FieldsV1 != nil && strings.Contains(string(m.FieldsV1.Raw), `"f:greeting"`) {
			managers = append(managers, m.Manager)
		}
	}
	return managers
}

// TestServerSideApplyForcesConflicts: a field that another field manager
// applied (a release made by the helm CLI, a kubectl apply) is taken by
// install, upgrade and rollback with server-side apply, without force.
func TestServerSideApplyForcesConflicts(t *testing.T) {
	tests := []struct {
		name string
		// released makes the release first: v1 "one", v2 "two".
		released bool
		// act runs the action after "other" applied greeting "theirs".
		act  func(t *testing.T, f *fixture) error
		want string
	}{
		{
			name: "install taking an object over",
			act: func(t *testing.T, f *fixture) error {
				_, err := f.runner.Install(context.Background(), basicChart(t, "1.0.0"), map[string]any{"greeting": "ours"},
					InstallOptions{ReleaseName: "app", Namespace: f.target, ServerSideApply: true, TakeOwnership: true})
				return err
			},
			want: "ours",
		},
		{
			name:     "upgrade",
			released: true,
			act: func(t *testing.T, f *fixture) error {
				_, err := f.runner.Upgrade(context.Background(), basicChart(t, "1.0.0"), map[string]any{"greeting": "ours"},
					UpgradeOptions{ReleaseName: "app", ServerSideApply: SSAEnabled})
				return err
			},
			want: "ours",
		},
		{
			name:     "rollback",
			released: true,
			act: func(_ *testing.T, f *fixture) error {
				_, err := f.runner.Rollback(context.Background(), "app", RollbackOptions{Version: 1, ServerSideApply: SSAEnabled})
				return err
			},
			want: "one",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			f := newFixture(t)
			if tt.released {
				f.install(t, "app", basicChart(t, "1.0.0"), map[string]any{"greeting": "one"})
				f.upgrade(t, "app", basicChart(t, "1.0.0"), map[string]any{"greeting": "two"})
			}
			f.applyAsOther(t, "app-cm", "theirs")
			g.Expect(f.greetingManagers(g, "app-cm")).To(ConsistOf("other"))

			g.Expect(tt.act(t, f)).To(Succeed())
			g.Expect(f.greeting("app-cm")).To(Equal(tt.want))
			g.Expect(f.greetingManagers(g, "app-cm")).NotTo(ContainElement("other"), "the conflict was forced")
		})
	}
}

// TestUpgradeForceReplacesWithClientSideApply: force keeps its meaning
// with client-side apply, where conflicts do not exist: objects are
// replaced.
func TestUpgradeForceReplacesWithClientSideApply(t *testing.T) {
	g := NewWithT(t)
	f := newFixture(t)
	f.install(t, "app", basicChart(t, "1.0.0"), map[string]any{"greeting": "one"})
	cm := &corev1.ConfigMap{}
	g.Expect(env.Client.Get(context.Background(), client.ObjectKey{Namespace: f.target, Name: "app-cm"}, cm)).To(Succeed())
	cm.Data["extra"] = "added by hand"
	g.Expect(env.Client.Update(context.Background(), cm)).To(Succeed())

	_, err := f.runner.Upgrade(context.Background(), basicChart(t, "1.0.0"), map[string]any{"greeting": "two"},
		UpgradeOptions{ReleaseName: "app", ServerSideApply: SSADisabled, Force: true})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(env.Client.Get(context.Background(), client.ObjectKey{Namespace: f.target, Name: "app-cm"}, cm)).To(Succeed())
	g.Expect(cm.Data).To(Equal(map[string]string{"greeting": "two"}), "a replace drops what the manifest does not have")
}
