package ssa

import (
	"context"
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/windlass-dev/windlass/internal/inventory"
	"github.com/windlass-dev/windlass/internal/testutil/testenv"
)

// applied applies objs with m and returns their inventory.
func applied(t *testing.T, m *Manager, objs []*unstructured.Unstructured) []inventory.Entry {
	t.Helper()
	cs, err := m.ApplyAllStaged(context.Background(), objs, ApplyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return cs.Inventory()
}

func entryOf(ns, name string) inventory.Entry {
	return inventory.Entry{ID: inventory.ObjMetadata{Namespace: ns, Name: name, Kind: "ConfigMap"}.ID(), Version: "v1"}
}

func TestPrune(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.CreateNamespace(t)
	m := newManager(t, ns)
	other, err := New(env.Client, nil, Options{FieldManager: testFieldManager, Owner: Owner{Name: "other", Namespace: ns}})
	g.Expect(err).NotTo(HaveOccurred())

	tests := []struct {
		name    string
		setup   func(name string)
		version string // the recorded version; v1 when empty
		action  Action // "" when the object is not reported
		kept    bool
	}{
		{
			name:   "owned object is deleted",
			setup:  func(name string) { applied(t, m, []*unstructured.Unstructured{configMap(ns, name, nil, nil)}) },
			action: ActionDeleted,
		},
		{
			name: "prune disabled annotation keeps it",
			setup: func(name string) {
				applied(t, m, []*unstructured.Unstructured{configMap(ns, name, map[string]string{PruneKey: "disabled"}, nil)})
			},
			action: ActionSkipped, kept: true,
		},
		{
			name: "prune Disabled label keeps it",
			setup: func(name string) {
				obj := configMap(ns, name, nil, nil)
				obj.SetLabels(map[string]string{PruneKey: "Disabled"})
				applied(t, m, []*unstructured.Unstructured{obj})
			},
			action: ActionSkipped, kept: true,
		},
		{
			name: "prune disabled added on the cluster keeps it",
			setup: func(name string) {
				applied(t, m, []*unstructured.Unstructured{configMap(ns, name, nil, nil)})
				cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}}
				patch := client.RawPatch("application/merge-patch+json", []byte(`{"metadata":{"annotations":{"`+PruneKey+`":"DISABLED"}}}`))
				g.Expect(env.Client.Patch(ctx, cm, patch)).To(Succeed())
			},
			action: ActionSkipped, kept: true,
		},
		{
			name: "object without owner labels is not ours",
			setup: func(name string) {
				g.Expect(env.Client.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}})).To(Succeed())
			},
			action: ActionSkipped, kept: true,
		},
		{
			name: "object taken over by another owner is not ours",
			setup: func(name string) {
				applied(t, m, []*unstructured.Unstructured{configMap(ns, name, nil, nil)})
				applied(t, other, []*unstructured.Unstructured{configMap(ns, name, nil, nil)})
			},
			action: ActionSkipped, kept: true,
		},
		{
			name:    "recorded version no longer served, object still there",
			setup:   func(name string) { applied(t, m, []*unstructured.Unstructured{configMap(ns, name, nil, nil)}) },
			version: "v1beta9",
			action:  ActionDeleted,
		},
		{
			name:  "object already gone is not reported",
			setup: func(string) {},
		},
	}
	var stale []inventory.Entry
	for i, tt := range tests {
		name := fmt.Sprintf("prune-%d", i)
		tt.setup(name)
		e := entryOf(ns, name)
		if tt.version != "" {
			e.Version = tt.version
		}
		stale = append(stale, e)
	}

	cs, err := m.Prune(ctx, stale, PruneOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	got := actions(cs)
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			name := fmt.Sprintf("prune-%d", i)
			subject := "ConfigMap/" + ns + "/" + name
			if tt.action == "" {
				g.Expect(got).NotTo(HaveKey(subject))
			} else {
				g.Expect(got).To(HaveKeyWithValue(subject, tt.action))
			}
			if tt.kept {
				g.Expect(get(t, "v1", "ConfigMap", ns, name)).NotTo(BeNil())
			} else {
				eventually(g, func() *unstructured.Unstructured { return get(t, "v1", "ConfigMap", ns, name) }).Should(BeNil())
			}
		})
	}
}

func TestPruneOrder(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.CreateNamespace(t)
	m := newManager(t, ns)
	cleanupCRDs(t, ns)
	deleteLater(t, "v1", "Namespace", ns+"-gone")
	inv := applied(t, m, parse(t, ns, crdManifest+"\n---\n"+`
apiVersion: v1
kind: Namespace
metadata: {name: ${NS}-gone}
---
apiVersion: ${GROUP}/v1
kind: Widget
metadata: {name: w, namespace: ${NS}}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: c, namespace: ${NS}}
`))
	cs, err := m.Prune(ctx, inv, PruneOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	// Namespaced objects and custom resources go before namespaces and CRDs.
	var order []int
	for _, c := range cs.Entries {
		g.Expect(c.Action).To(Equal(ActionDeleted), c.String())
		order = append(order, stageOf(c.Object.GroupKind()))
	}
	g.Expect(order).To(Equal([]int{2, 2, 0, 0, 0}))
}

func TestPruneRefusedKeepsSurvivors(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.CreateNamespace(t)
	m := newManager(t, ns)
	env.DenyProtectedDeletes(t, ns)

	protected := configMap(ns, "b-protected", nil, nil)
	protected.SetLabels(map[string]string{testenv.ProtectedLabel: "true"})
	inv := applied(t, m, []*unstructured.Unstructured{
		configMap(ns, "a-free", nil, nil),
		protected,
		configMap(ns, "c-free", nil, nil),
	})

	cs, err := m.Prune(ctx, inv, PruneOptions{})
	var perr *PruneError
	g.Expect(err).To(BeAssignableToTypeOf(perr))
	g.Expect(err.Error()).To(ContainSubstring("ConfigMap/" + ns + "/b-protected: "))
	g.Expect(err.Error()).To(ContainSubstring("deletion of protected objects is not allowed"))
	g.Expect(Survivors(err)).To(Equal([]inventory.Entry{entryOf(ns, "b-protected")}))
	g.Expect(cs.Summary()).To(Equal("ConfigMap/" + ns + "/a-free deleted\nConfigMap/" + ns + "/c-free deleted"))

	g.Expect(get(t, "v1", "ConfigMap", ns, "b-protected")).NotTo(BeNil())
	eventually(g, func() *unstructured.Unstructured { return get(t, "v1", "ConfigMap", ns, "a-free") }).Should(BeNil())
	eventually(g, func() *unstructured.Unstructured { return get(t, "v1", "ConfigMap", ns, "c-free") }).Should(BeNil())

	// The caller keeps the survivor and retries; while refused it stays.
	next := inventory.Merge(nil, Survivors(err))
	_, err = m.Prune(ctx, next, PruneOptions{})
	g.Expect(Survivors(err)).To(Equal(next))
}

func TestPruneKindGone(t *testing.T) {
	ctx := context.Background()
	ns := env.CreateNamespace(t)
	m := newManager(t, ns)
	tests := []struct {
		name  string
		stale func(t *testing.T) []inventory.Entry
	}{
		{
			name: "CRD deleted after its objects were applied",
			stale: func(t *testing.T) []inventory.Entry {
				g := NewWithT(t)
				cleanupCRDs(t, ns)
				inv := applied(t, m, parse(t, ns, crdManifest+"\n---\n"+`
apiVersion: ${GROUP}/v1
kind: Widget
metadata: {name: w, namespace: ${NS}}
`))
				for _, name := range []string{"widgets.", "widgetclasses."} {
					crd := &unstructured.Unstructured{}
					crd.SetAPIVersion("apiextensions.k8s.io/v1")
					crd.SetKind("CustomResourceDefinition")
					crd.SetName(name + groupFor(ns))
					g.Expect(env.Client.Delete(ctx, crd)).To(Succeed())
					eventually(g, func() *unstructured.Unstructured {
						return get(t, "apiextensions.k8s.io/v1", "CustomResourceDefinition", "", crd.GetName())
					}).Should(BeNil())
				}
				// Only the custom resource is stale; the mapper may still
				// remember its kind.
				var stale []inventory.Entry
				for _, e := range inv {
					if o, _ := e.ObjMetadata(); o.Kind == "Widget" {
						stale = append(stale, e)
					}
				}
				NewWithT(t).Expect(stale).To(HaveLen(1))
				return stale
			},
		},
		{
			name: "kind never served",
			stale: func(*testing.T) []inventory.Entry {
				return []inventory.Entry{{ID: ns + "_w_nowhere.windlass.test_Ghost", Version: "v1"}}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			cs, err := m.Prune(ctx, tt.stale(t), PruneOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(cs.Entries).To(BeEmpty())
		})
	}

	t.Run("malformed entry is reported and not kept", func(t *testing.T) {
		g := NewWithT(t)
		owned := applied(t, m, []*unstructured.Unstructured{configMap(ns, "fine", nil, nil)})
		cs, err := m.Prune(ctx, append(owned, inventory.Entry{ID: "garbage", Version: "v1"}), PruneOptions{})
		g.Expect(err).To(MatchError(ContainSubstring(`InventoryEntry/garbage: inventory ID "garbage"`)))
		g.Expect(Survivors(err)).To(BeEmpty())
		g.Expect(cs.Summary()).To(Equal("ConfigMap/" + ns + "/fine deleted"))
	})
}

func TestPruneWaitForTermination(t *testing.T) {
	ctx := context.Background()
	ns := env.CreateNamespace(t)
	m := newManager(t, ns)
	const finalizer = "windlass.test/hold"
	tests := []struct {
		name        string
		release     time.Duration // when the finalizer is removed; 0 never
		wantSurvive bool
	}{
		{name: "waits until the finalizer is done", release: 500 * time.Millisecond},
		{name: "times out and keeps the survivor", wantSurvive: true},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			name := fmt.Sprintf("held-%d", i)
			obj := configMap(ns, name, nil, nil)
			obj.SetFinalizers([]string{finalizer})
			inv := applied(t, m, []*unstructured.Unstructured{obj})
			release := func() {
				cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}}
				_ = env.Client.Patch(context.Background(), cm,
					client.RawPatch("application/merge-patch+json", []byte(`{"metadata":{"finalizers":null}}`)))
			}
			t.Cleanup(release)
			if tt.release > 0 {
				timer := time.AfterFunc(tt.release, release)
				t.Cleanup(func() { timer.Stop() })
			}

			start := time.Now()
			cs, err := m.Prune(ctx, inv, PruneOptions{WaitForTermination: true, WaitTimeout: 3 * time.Second})
			g.Expect(cs.Summary()).To(Equal("ConfigMap/" + ns + "/" + name + " deleted"))
			if tt.wantSurvive {
				g.Expect(err).To(MatchError(ContainSubstring("still terminating after 3s")))
				g.Expect(Survivors(err)).To(Equal(inv))
				g.Expect(get(t, "v1", "ConfigMap", ns, name)).NotTo(BeNil())
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(time.Since(start)).To(BeNumerically(">=", tt.release))
			g.Expect(get(t, "v1", "ConfigMap", ns, name)).To(BeNil())
		})
	}
}

func TestDelete(t *testing.T) {
	ctx := context.Background()
	ns := env.CreateNamespace(t)
	m := newManager(t, ns)
	tests := []struct {
		name    string
		opts    DeleteOptions
		deleted bool
		wantErr bool
	}{
		{name: "MirrorPrune with prune deletes", opts: DeleteOptions{Prune: true}, deleted: true},
		{name: "MirrorPrune without prune orphans", opts: DeleteOptions{Policy: DeletionPolicyMirrorPrune}},
		{name: "Delete deletes", opts: DeleteOptions{Policy: DeletionPolicyDelete}, deleted: true},
		{name: "WaitForTermination deletes and waits", opts: DeleteOptions{Policy: DeletionPolicyWaitForTermination}, deleted: true},
		{name: "Orphan orphans", opts: DeleteOptions{Policy: DeletionPolicyOrphan, Prune: true}},
		{name: "unknown policy", opts: DeleteOptions{Policy: "Shred"}, wantErr: true},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			name := fmt.Sprintf("del-%d", i)
			inv := applied(t, m, []*unstructured.Unstructured{configMap(ns, name, nil, nil)})
			cs, err := m.Delete(ctx, inv, tt.opts)
			if tt.wantErr {
				g.Expect(err).To(HaveOccurred())
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			if tt.deleted {
				g.Expect(cs.Summary()).To(Equal("ConfigMap/" + ns + "/" + name + " deleted"))
				eventually(g, func() *unstructured.Unstructured { return get(t, "v1", "ConfigMap", ns, name) }).Should(BeNil())
				return
			}
			g.Expect(cs.Entries).To(BeEmpty())
			g.Expect(get(t, "v1", "ConfigMap", ns, name)).NotTo(BeNil())
		})
	}
}
