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
