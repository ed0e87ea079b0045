package kustomize

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"

	kustomizev1 "github.com/windlass-dev/windlass/api/kustomize/v1"
)

func TestApplierFactoryLocalTargetIsSharedSafely(t *testing.T) {
	g := NewWithT(t)
	f := &ApplierFactory{Config: env.Config, Scheme: env.Scheme, Mapper: env.Client.RESTMapper()}
	obj := &kustomizev1.Kustomization{}
	obj.Namespace = "default"
	targets := make(chan *target, 8)
	for range 8 {
		go func() {
			tgt, err := f.For(context.Background(), obj, env.Client)
			g.Expect(err).NotTo(HaveOccurred())
			targets <- tgt
		}()
	}
	first := <-targets
	for range 7 {
		g.Expect(<-targets).To(BeIdenticalTo(first))
	}
}

func TestApplierFactoryCachesTargetsPerIdentity(t *testing.T) {
	g := NewWithT(t)
	f := &ApplierFactory{Config: env.Config, Scheme: env.Scheme, Mapper: env.Client.RESTMapper()}
	forSA := func(ns, sa string) *target {
		obj := &kustomizev1.Kustomization{}
		obj.Namespace, obj.Spec.ServiceAccountName = ns, sa
		tgt, err := f.For(context.Background(), obj, env.Client)
		g.Expect(err).NotTo(HaveOccurred())
		return tgt
	}
	a := forSA("team-a", "deployer")
	g.Expect(forSA("team-a", "deployer")).To(BeIdenticalTo(a))
	g.Expect(forSA("team-b", "deployer")).NotTo(BeIdenticalTo(a))
	g.Expect(forSA("team-a", "other")).NotTo(BeIdenticalTo(a))

	f.DefaultServiceAccount = "restricted"
	g.Expect(forSA("team-a", "")).To(BeIdenticalTo(forSA("team-a", "restricted")), "the default service account is impersonated")
}
