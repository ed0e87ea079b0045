package versions

import (
	"context"
	"os"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/windlass-dev/windlass/internal/testutil/testenv"
)

var env *testenv.Environment

func TestMain(m *testing.M) {
	os.Exit(testenv.Run(m, &env))
}

const owner = "kustomize.toolkit.fluxcd.io/name"

// TestResourceVersion checks that the cache answers the version of owned
// objects once its watch has synced, follows their changes and deletion,
// and knows nothing of objects without the label.
func TestResourceVersion(t *testing.T) {
	g := NewWithT(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ns := env.CreateNamespace(t)
	c, err := New(env.Config, env.Client.RESTMapper(), owner)
	g.Expect(err).NotTo(HaveOccurred())
	go func() { _ = c.Start(ctx) }()

	owned := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "owned", Namespace: ns, Labels: map[string]string{owner: "app"}},
		Data: map[string]string{"k": "1"}}
	foreign := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "foreign", Namespace: ns}}
	g.Expect(env.Client.Create(ctx, owned)).To(Succeed())
	g.Expect(env.Client.Create(ctx, foreign)).To(Succeed())
	gvk := corev1.SchemeGroupVersion.WithKind("ConfigMap")
	version := func(name string) func() (string, bool) {
		return func() (string, bool) { return c.ResourceVersion(ctx, gvk, ns, name) }
	}

	_, ok := version("owned")()
	g.Expect(ok).To(BeFalse(), "the first question starts the watch")
	g.Eventually(func(g Gomega) {
		v, ok := version("owned")()
		g.Expect(ok).To(BeTrue())
		g.Expect(v).To(Equal(owned.ResourceVersion))
	}, 30*time.Second, 50*time.Millisecond).Should(Succeed())
	_, ok = version("foreign")()
	g.Expect(ok).To(BeFalse(), "objects without the label are not watched")

	owned.Data["k"] = "2"
	g.Expect(env.Client.Update(ctx, owned)).To(Succeed())
	g.Eventually(func() string { v, _ := version("owned")(); return v }, 30*time.Second, 50*time.Millisecond).Should(Equal(owned.ResourceVersion))

	g.Expect(env.Client.Delete(ctx, owned)).To(Succeed())
	g.Eventually(func() bool { _, ok := version("owned")(); return ok }, 30*time.Second, 50*time.Millisecond).Should(BeFalse())

	// What the watch holds of an object is its name and version.
	stored := &metav1.PartialObjectMetadata{}
	stored.SetGroupVersionKind(gvk)
	kept := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "kept", Namespace: ns,
		Labels: map[string]string{owner: "app"}, Annotations: map[string]string{"big": "value"}}}
	g.Expect(env.Client.Create(ctx, kept)).To(Succeed())
	g.Eventually(func() error { return c.cache.Get(ctx, client.ObjectKeyFromObject(kept), stored) }, 30*time.Second, 50*time.Millisecond).Should(Succeed())
	g.Expect(stored.Labels).To(BeEmpty())
	g.Expect(stored.Annotations).To(BeEmpty())
	g.Expect(stored.ManagedFields).To(BeEmpty())
	g.Expect(stored.ResourceVersion).To(Equal(kept.ResourceVersion))
}

// TestSelectorAndSynced: a selector with a value leaves out the objects
// whose label has another value, Synced tells when the watch of a kind is
// complete, and a selector that selects everything is refused.
func TestSelectorAndSynced(t *testing.T) {
	g := NewWithT(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ns := env.CreateNamespace(t)
	_, err := New(env.Config, env.Client.RESTMapper(), "")
	g.Expect(err).To(MatchError(ContainSubstring("selects every object")))
	c, err := New(env.Config, env.Client.RESTMapper(), "owner=helm")
	g.Expect(err).NotTo(HaveOccurred())
	go func() { _ = c.Start(ctx) }()

	helm := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "helm", Namespace: ns, Labels: map[string]string{"owner": "helm"}}}
	other := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "other", Namespace: ns, Labels: map[string]string{"owner": "someone"}}}
	g.Expect(env.Client.Create(ctx, helm)).To(Succeed())
	g.Expect(env.Client.Create(ctx, other)).To(Succeed())
	gvk := corev1.SchemeGroupVersion.WithKind("Secret")
	g.Expect(c.Synced(ctx, gvk)).To(BeFalse(), "the first question starts the watch")
	g.Eventually(func() bool { return c.Synced(ctx, gvk) }, 30*time.Second, 50*time.Millisecond).Should(BeTrue())
	g.Eventually(func() string { v, _ := c.ResourceVersion(ctx, gvk, ns, "helm"); return v }, 30*time.Second, 50*time.Millisecond).
		Should(Equal(helm.ResourceVersion))
	_, ok := c.ResourceVersion(ctx, gvk, ns, "other")
	g.Expect(ok).To(BeFalse(), "another value of the label is not selected")
}

// TestWaitForSync: the first question about a kind, asked with
// WaitForSync, is answered once the watch holds what exists.
func TestWaitForSync(t *testing.T) {
	g := NewWithT(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ns := env.CreateNamespace(t)
	owned := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "owned", Namespace: ns, Labels: map[string]string{owner: "app"}}}
	g.Expect(env.Client.Create(ctx, owned)).To(Succeed())
	c, err := New(env.Config, env.Client.RESTMapper(), owner)
	g.Expect(err).NotTo(HaveOccurred())
	go func() { _ = c.Start(ctx) }()

	gvk := corev1.SchemeGroupVersion.WithKind("Secret")
	waitCtx, stop := context.WithTimeout(ctx, 30*time.Second)
	defer stop()
	g.Expect(c.WaitForSync(waitCtx, gvk)).To(BeTrue())
	v, ok := c.ResourceVersion(ctx, gvk, ns, "owned")
	g.Expect(ok).To(BeTrue(), "a synced watch holds the object at once")
	g.Expect(v).To(Equal(owned.ResourceVersion))

	ended, end := context.WithCancel(ctx)
	end()
	g.Expect(c.WaitForSync(ended, corev1.SchemeGroupVersion.WithKind("Service"))).To(BeFalse(), "a wait whose context ended says so")

	// A watch that cannot sync (its list refused) ends the wait when its
	// list fails, not at the wait's deadline, and holds up one wait only.
	// So does the watch of the whole objects of a kind judged for health.
	refused := rest.CopyConfig(env.Config)
	refused.Impersonate = rest.ImpersonationConfig{UserName: "nobody"}
	deployment := schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}
	blind, err := New(refused, env.Client.RESTMapper(), owner, WithHealth(readyReplicas,
		func(gk schema.GroupKind) bool { return gk == deployment.GroupKind() }, nil))
	g.Expect(err).NotTo(HaveOccurred())
	go func() { _ = blind.Start(ctx) }()
	for _, kind := range []schema.GroupVersionKind{gvk, deployment} {
		first, stopFirst := context.WithTimeout(ctx, time.Minute)
		defer stopFirst()
		g.Expect(blind.WaitForSync(first, kind)).To(BeFalse())
		g.Expect(first.Err()).To(BeNil(), "the refused list of %s ended the first wait", kind.Kind)
		second, stopSecond := context.WithTimeout(ctx, time.Minute)
		defer stopSecond()
		g.Expect(blind.WaitForSync(second, kind)).To(BeFalse())
		g.Expect(second.Err()).To(BeNil(), "the second wait for %s, given up on, answers at once", kind.Kind)
	}
}
