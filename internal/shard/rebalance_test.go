package shard

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kustomizev1 "github.com/windlass-dev/windlass/api/kustomize/v1"
	"github.com/windlass-dev/windlass/api/meta"
)

// TestClaim: a claim makes the member the holder and adds the reconcilers'
// finalizer in the same request (the holder's first run then needs none of
// its own), keeps the other finalizers, and changes nothing when the object
// changed since it was read.
func TestClaim(t *testing.T) {
	ctx := context.Background()
	ns := env.CreateNamespace(t)
	m, err := NewMember(env.Config, env.Client, env.Client.RESTMapper(),
		Options{Name: "me", Ring: "windlass", Namespace: ns, LeaseDuration: 15 * time.Second})
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	gvr := schema.GroupVersionResource{Group: kustomizev1.GroupVersion.Group, Version: kustomizev1.GroupVersion.Version, Resource: "kustomizations"}
	tests := []struct {
		name           string
		finalizers     []string
		stale          bool
		wantHolder     string
		wantFinalizers []string
	}{
		{name: "unheld, new", wantHolder: "me", wantFinalizers: []string{meta.Finalizer}},
		{name: "with a finalizer of another's", finalizers: []string{"example.com/keep"}, wantHolder: "me",
			wantFinalizers: []string{"example.com/keep", meta.Finalizer}},
		{name: "with the finalizer already", finalizers: []string{meta.Finalizer}, wantHolder: "me", wantFinalizers: []string{meta.Finalizer}},
		{name: "changed since it was read", stale: true, finalizers: []string{"example.com/keep"}, wantFinalizers: []string{"example.com/keep"}},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			ks := newKustomization(g, ns, "app-"+string(rune('a'+i)), "")
			if len(tt.finalizers) > 0 {
				ks.Finalizers = tt.finalizers
				g.Expect(env.Client.Update(ctx, ks)).To(Succeed())
			}
			read := &metav1.PartialObjectMetadata{}
			read.SetGroupVersionKind(kustomizev1.GroupVersion.WithKind("Kustomization"))
			g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(ks), read)).To(Succeed())
			if tt.stale {
				ks.Annotations = map[string]string{"changed": "after the read"}
				g.Expect(env.Client.Update(ctx, ks)).To(Succeed())
			}
			g.Expect(m.claim(ctx, "Kustomization", gvr, read)).To(Succeed())
			got := &kustomizev1.Kustomization{}
			g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(ks), got)).To(Succeed())
			g.Expect(got.Labels[HolderLabel]).To(Equal(tt.wantHolder))
			g.Expect(got.Finalizers).To(Equal(tt.wantFinalizers))
		})
	}
}
