package ssa

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// configMap returns a ConfigMap manifest with the given annotations and
// data.
func configMap(ns, name string, annotations map[string]string, data map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": name, "namespace": ns},
		"data":     data,
	}}
	u.SetAnnotations(annotations)
	return u
}

// edit changes a ConfigMap's data as another field manager would, with a
// plain update (as kubectl edit does).
func edit(t *testing.T, ns, name, manager string, data map[string]string) {
	t.Helper()
	cm := &corev1.ConfigMap{}
	if err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, cm); err != nil {
		t.Fatal(err)
	}
	for k, v := range data {
		cm.Data[k] = v
	}
	if err := env.Client.Update(context.Background(), cm, client.FieldOwner(manager)); err != nil {
		t.Fatal(err)
	}
}

func liveData(t *testing.T, ns, name string) map[string]string {
	t.Helper()
	u := get(t, "v1", "ConfigMap", ns, name)
	if u == nil {
		return nil
	}
	data, _, _ := unstructured.NestedStringMap(u.Object, "data")
	return data
}

func TestApplyPolicyMerge(t *testing.T) {
	ctx := context.Background()
	ns := env.CreateNamespace(t)
	m := newManager(t, ns)
	tests := []struct {
		name        string
		annotations map[string]string
		want        map[string]string
	}{
		{
			name:        "Merge leaves another manager's edit and takes the rest",
			annotations: map[string]string{SSAKey: "Merge"},
			want:        map[string]string{"a": "edited", "b": "2", "c": "extra"},
		},
		{
			name:        "Override takes the edited field back",
			annotations: nil,
			want:        map[string]string{"a": "1", "b": "2", "c": "extra"},
		},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			name := []string{"merge", "override"}[i]
			obj := configMap(ns, name, tt.annotations, map[string]any{"a": "1", "b": "1"})
			_, err := m.ApplyAllStaged(ctx, []*unstructured.Unstructured{obj}, ApplyOptions{})
			g.Expect(err).NotTo(HaveOccurred())

			edit(t, ns, name, "kubectl-edit", map[string]string{"a": "edited", "c": "extra"})

			obj = configMap(ns, name, tt.annotations, map[string]any{"a": "1", "b": "2"})
			cs, err := m.ApplyAllStaged(ctx, []*unstructured.Unstructured{obj}, ApplyOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(cs.String()).To(Equal("ConfigMap/" + ns + "/" + name + " configured"))
			g.Expect(liveData(t, ns, name)).To(Equal(tt.want))

			// Nothing left to do.
			cs, err = m.ApplyAllStaged(ctx, []*unstructured.Unstructured{obj}, ApplyOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(cs.String()).To(Equal("ConfigMap/" + ns + "/" + name + " unchanged"))
		})
	}
}

func TestApplyPolicyIfNotPresent(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.CreateNamespace(t)
	m := newManager(t, ns)
	ann := map[string]string{SSAKey: "IfNotPresent"}

	// Absent: created, with the owner labels.
	cs, err := m.ApplyAllStaged(ctx, []*unstructured.Unstructured{configMap(ns, "once", ann, map[string]any{"k": "1"})}, ApplyOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(cs.String()).To(Equal("ConfigMap/" + ns + "/once created"))
	g.Expect(liveData(t, ns, "once")).To(Equal(map[string]string{"k": "1"}))

	// Present: never updated.
	rv := get(t, "v1", "ConfigMap", ns, "once").GetResourceVersion()
	cs, err = m.ApplyAllStaged(ctx, []*unstructured.Unstructured{configMap(ns, "once", ann, map[string]any{"k": "2"})}, ApplyOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(cs.String()).To(Equal("ConfigMap/" + ns + "/once skipped"))
	g.Expect(get(t, "v1", "ConfigMap", ns, "once").GetResourceVersion()).To(Equal(rv))

	// Present and made by someone else: not touched, not labelled.
	g.Expect(env.Client.Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "theirs", Namespace: ns},
		Data:       map[string]string{"k": "theirs"},
	})).To(Succeed())
	cs, err = m.ApplyAllStaged(ctx, []*unstructured.Unstructured{configMap(ns, "theirs", ann, map[string]any{"k": "mine"})}, ApplyOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(cs.String()).To(Equal("ConfigMap/" + ns + "/theirs skipped"))
	live := get(t, "v1", "ConfigMap", ns, "theirs")
	g.Expect(live.GetLabels()).To(BeEmpty())
	g.Expect(liveData(t, ns, "theirs")).To(Equal(map[string]string{"k": "theirs"}))
}

func TestApplyPolicyIgnore(t *testing.T) {
	ctx := context.Background()
	ns := env.CreateNamespace(t)
	m := newManager(t, ns)
	tests := []struct {
		name        string
		annotations map[string]string
		labels      map[string]string
		onLive      bool
	}{
		{name: "ssa Ignore annotation", annotations: map[string]string{SSAKey: "Ignore"}},
		{name: "ssa ignore label", labels: map[string]string{SSAKey: "ignore"}},
		{name: "legacy reconcile disabled", annotations: map[string]string{ReconcileKey: "disabled"}},
		{name: "reconcile disabled on the live object", annotations: map[string]string{ReconcileKey: "disabled"}, onLive: true},
		{name: "ssa Ignore on the live object", labels: map[string]string{SSAKey: "Ignore"}, onLive: true},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			name := "ignored-" + string(rune('a'+i))
			obj := configMap(ns, name, nil, map[string]any{"k": "mine"})
			if tt.onLive {
				g.Expect(env.Client.Create(ctx, &corev1.ConfigMap{
					ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Annotations: tt.annotations, Labels: tt.labels},
					Data:       map[string]string{"k": "hands off"},
				})).To(Succeed())
			} else {
				obj.SetAnnotations(tt.annotations)
				obj.SetLabels(tt.labels)
			}
			for range 2 {
				cs, err := m.ApplyAllStaged(ctx, []*unstructured.Unstructured{obj}, ApplyOptions{})
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(cs.String()).To(Equal("ConfigMap/" + ns + "/" + name + " skipped"))
			}
			if tt.onLive {
				g.Expect(liveData(t, ns, name)).To(Equal(map[string]string{"k": "hands off"}))
			} else {
				g.Expect(get(t, "v1", "ConfigMap", ns, name)).To(BeNil())
			}
		})
	}
}

func TestApplyRevertsDrift(t *testing.T) {
	ctx := context.Background()
	ns := env.CreateNamespace(t)
	m := newManager(t, ns)
	tests := []struct {
		name    string
		manager string
		change  func(t *testing.T, name, manager string)
	}{
		{
			name: "kubectl edit (update)", manager: "kubectl-edit",
			change: func(t *testing.T, name, manager string) {
				edit(t, ns, name, manager, map[string]string{"k": "drifted"})
			},
		},
		{
			name: "before-first-apply (merge patch)", manager: "before-first-apply",
			change: func(t *testing.T, name, manager string) {
				cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}}
				patch := client.RawPatch("application/merge-patch+json", []byte(`{"data":{"k":"drifted"}}`))
				if err := env.Client.Patch(context.Background(), cm, patch, client.FieldOwner(manager)); err != nil {
					t.Fatal(err)
				}
			},
		},
		{
			name: "another applier forcing ownership", manager: "someone-else",
			change: func(t *testing.T, name, manager string) {
				u := configMap(ns, name, nil, map[string]any{"k": "drifted"})
				if err := env.Client.Apply(context.Background(), client.ApplyConfigurationFromUnstructured(u),
					client.FieldOwner(manager), client.ForceOwnership); err != nil {
					t.Fatal(err)
				}
			},
		},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			name := "drift-" + string(rune('a'+i))
			objs := []*unstructured.Unstructured{configMap(ns, name, nil, map[string]any{"k": "desired"})}
			_, err := m.ApplyAllStaged(ctx, objs, ApplyOptions{})
			g.Expect(err).NotTo(HaveOccurred())

			tt.change(t, name, tt.manager)
			g.Expect(liveData(t, ns, name)).To(HaveKeyWithValue("k", "drifted"))

			cs, err := m.ApplyAllStaged(ctx, objs, ApplyOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(cs.String()).To(Equal("ConfigMap/" + ns + "/" + name + " configured"))
			g.Expect(liveData(t, ns, name)).To(HaveKeyWithValue("k", "desired"))

			// The field is ours again.
			live := get(t, "v1", "ConfigMap", ns, name)
			entry := appliedEntry(live, testFieldManager)
			g.Expect(entry).NotTo(BeNil())
			fields, err := entry.fieldsJSON()
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(string(fields)).To(ContainSubstring(`"f:k"`))
		})
	}
}
