package versions

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestFieldsVersion: the fields version of an object moves when its
// applier applies it again, or when another manager changes or removes a
// field the applier owns; not when another manager writes fields of its
// own. It is the FieldsDigest of what the API server answered.
func TestFieldsVersion(t *testing.T) {
	g := NewWithT(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ns := env.CreateNamespace(t)
	c, err := New(env.Config, env.Client.RESTMapper(), owner, WithFieldsOf("applier"))
	g.Expect(err).NotTo(HaveOccurred())
	go func() { _ = c.Start(ctx) }()
	gvk := corev1.SchemeGroupVersion.WithKind("ConfigMap")

	cm := &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: ns, Labels: map[string]string{owner: "app"}},
		Data:       map[string]string{"k": "1", "l": "1"}}
	apply := func(data map[string]string) *corev1.ConfigMap {
		obj := cm.DeepCopy()
		obj.Data = data
		g.Expect(env.Client.Patch(ctx, obj, client.Apply, client.FieldOwner("applier"), client.ForceOwnership)).To(Succeed())
		return obj
	}
	fields := func() string {
		v, _ := c.FieldsVersion(ctx, gvk, ns, "app")
		return v
	}
	version := func() string {
		v, _ := c.ResourceVersion(ctx, gvk, ns, "app")
		return v
	}
	settled := func(obj *corev1.ConfigMap) string {
		g.Eventually(version, 30*time.Second, 50*time.Millisecond).Should(Equal(obj.ResourceVersion))
		return fields()
	}

	applied := apply(map[string]string{"k": "1", "l": "1"})
	first := settled(applied)
	g.Expect(first).NotTo(BeEmpty())
	g.Expect(first).To(Equal(FieldsDigest(applied, "applier")), "the digest of the apply's answer")

	other := applied.DeepCopy()
	other.Annotations = map[string]string{"note": "another manager's"}
	g.Expect(env.Client.Update(ctx, other, client.FieldOwner("other"))).To(Succeed())
	g.Expect(settled(other)).To(Equal(first), "another manager's own field")

	other.Data["k"] = "2"
	g.Expect(env.Client.Update(ctx, other, client.FieldOwner("other"))).To(Succeed())
	changed := settled(other)
	g.Expect(changed).NotTo(Equal(first), "another manager changed a field the applier owns")

	reapplied := apply(map[string]string{"k": "1", "l": "1"})
	again := settled(reapplied)
	g.Expect(again).NotTo(Equal(changed), "the applier applied again")
	g.Expect(again).To(Equal(FieldsDigest(reapplied, "applier")))

	removed := reapplied.DeepCopy()
	delete(removed.Data, "l")
	g.Expect(env.Client.Update(ctx, removed, client.FieldOwner("other"))).To(Succeed())
	g.Expect(settled(removed)).NotTo(Equal(again), "another manager removed a field the applier owns")

	plain, err := New(env.Config, env.Client.RESTMapper(), owner)
	g.Expect(err).NotTo(HaveOccurred())
	_, ok := plain.FieldsVersion(ctx, gvk, ns, "app")
	g.Expect(ok).To(BeFalse(), "a cache made without WithFieldsOf has none")
}
