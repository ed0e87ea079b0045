package versions

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// readyReplicas judges a Deployment by its status' ready replicas.
func readyReplicas(obj *unstructured.Unstructured) (string, string) {
	ready, _, _ := unstructured.NestedInt64(obj.Object, "status", "readyReplicas")
	if ready > 0 {
		return "Current", "ready"
	}
	return "InProgress", "no replica ready"
}

// TestHealth: a cache made WithHealth watches the whole objects of the
// kinds it judges, keeps their verdict and fingerprint as they change and
// nothing else of them, answers their versions as for any kind, and judges
// no other kind.
func TestHealth(t *testing.T) {
	g := NewWithT(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ns := env.CreateNamespace(t)
	deployments := func(gk schema.GroupKind) bool { return gk == schema.GroupKind{Group: "apps", Kind: "Deployment"} }
	c, err := New(env.Config, env.Client.RESTMapper(), owner, WithHealth(readyReplicas, deployments,
		func(obj *unstructured.Unstructured) string { return "fingerprint of " + obj.GetName() }))
	g.Expect(err).NotTo(HaveOccurred())
	told := make(chan types.NamespacedName, 10)
	c.NotifyHealth(func(gvk schema.GroupVersionKind, key types.NamespacedName) {
		if gvk.Kind == "Deployment" {
			told <- key
		}
	})
	go func() { _ = c.Start(ctx) }()

	labels := map[string]string{owner: "app", "app": "web"}
	web := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns, Labels: labels},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](1), Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.invalid/web:1"}}}}},
	}
	g.Expect(env.Client.Create(ctx, web)).To(Succeed())
	gvk := appsv1.SchemeGroupVersion.WithKind("Deployment")
	judged := func() Health { h, _ := c.Health(ctx, gvk, ns, "web"); return h }

	_, ok := c.Health(ctx, gvk, ns, "web")
	g.Expect(ok).To(BeFalse(), "the first question starts the watch")
	g.Eventually(judged, 30*time.Second, 50*time.Millisecond).Should(Equal(Health{ResourceVersion: web.ResourceVersion,
		Generation: 1, Status: "InProgress", Message: "no replica ready", Fingerprint: "fingerprint of web"}))
	version, ok := c.ResourceVersion(ctx, gvk, ns, "web")
	g.Expect(ok).To(BeTrue())
	g.Expect(version).To(Equal(web.ResourceVersion), "the whole watch tells versions too")

	web.Status.Replicas, web.Status.ReadyReplicas = 1, 1
	g.Expect(env.Client.Status().Update(ctx, web)).To(Succeed())
	g.Eventually(judged, 30*time.Second, 50*time.Millisecond).Should(Equal(Health{ResourceVersion: web.ResourceVersion,
		Generation: 1, Status: "Current", Message: "ready", Fingerprint: "fingerprint of web"}))

	// Listeners are told of an object first held, and of each change of
	// its health (TestHealthListeners: of nothing else).
	key := types.NamespacedName{Namespace: ns, Name: "web"}
	g.Eventually(told, 30*time.Second).Should(Receive(Equal(key)), "first held")
	g.Eventually(told, 30*time.Second).Should(Receive(Equal(key)), "became Current")
	web.Status.ReadyReplicas = 0
	g.Expect(env.Client.Status().Update(ctx, web)).To(Succeed())
	g.Eventually(told, 30*time.Second).Should(Receive(Equal(key)), "in progress again")

	// What the watch holds of the object is its metadata and the verdict.
	stored := &unstructured.Unstructured{}
	stored.SetGroupVersionKind(gvk)
	g.Expect(c.cache.Get(ctx, client.ObjectKeyFromObject(web), stored)).To(Succeed())
	g.Expect(stored.Object).NotTo(HaveKey("spec"))
	g.Expect(stored.Object).NotTo(HaveKey("status"))
	g.Expect(stored.GetLabels()).To(BeEmpty())
	g.Expect(stored.GetManagedFields()).To(BeEmpty())

	// Another kind is watched for its versions, and not judged.
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "settings", Namespace: ns, Labels: labels}}
	g.Expect(env.Client.Create(ctx, cm)).To(Succeed())
	cmGVK := corev1.SchemeGroupVersion.WithKind("ConfigMap")
	g.Eventually(func() string { v, _ := c.ResourceVersion(ctx, cmGVK, ns, "settings"); return v },
		30*time.Second, 50*time.Millisecond).Should(Equal(cm.ResourceVersion))
	_, ok = c.Health(ctx, cmGVK, ns, "settings")
	g.Expect(ok).To(BeFalse())
}

// TestHealthListeners: the watch's handler tells the listeners of an object
// it holds for the first time and of one whose health changed, and not of
// a write that left the health as it was.
func TestHealthListeners(t *testing.T) {
	gvk := appsv1.SchemeGroupVersion.WithKind("Deployment")
	kept := func(health string) *unstructured.Unstructured {
		obj := &unstructured.Unstructured{}
		obj.SetGroupVersionKind(gvk)
		obj.SetNamespace("ns")
		obj.SetName("web")
		obj.SetAnnotations(map[string]string{healthAnnotation: health})
		return obj
	}
	for _, tc := range []struct {
		name   string
		event  func(h toolscache.ResourceEventHandler)
		toldOf int
	}{
		{"first held", func(h toolscache.ResourceEventHandler) { h.OnAdd(kept("InProgress"), true) }, 1},
		{"created", func(h toolscache.ResourceEventHandler) { h.OnAdd(kept("InProgress"), false) }, 1},
		{"became Current", func(h toolscache.ResourceEventHandler) { h.OnUpdate(kept("InProgress"), kept("Current")) }, 1},
		{"health as it was", func(h toolscache.ResourceEventHandler) { h.OnUpdate(kept("InProgress"), kept("InProgress")) }, 0},
		{"deleted", func(h toolscache.ResourceEventHandler) { h.OnDelete(kept("Current")) }, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			var l listeners
			var told []types.NamespacedName
			l.add(func(got schema.GroupVersionKind, key types.NamespacedName) {
				g.Expect(got).To(Equal(gvk))
				told = append(told, key)
			})
			tc.event(l.handler(gvk))
			g.Expect(told).To(HaveLen(tc.toldOf))
			for _, key := range told {
				g.Expect(key).To(Equal(types.NamespacedName{Namespace: "ns", Name: "web"}))
			}
		})
	}
}
