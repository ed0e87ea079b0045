package crd

import (
	"testing"

	. "github.com/onsi/gomega"
)

// TestObjectsAreTheWindlassKinds: every embedded file is a CRD of a
// toolkit group.
func TestObjectsAreTheWindlassKinds(t *testing.T) {
	g := NewWithT(t)
	crds, err := Objects()
	g.Expect(err).NotTo(HaveOccurred())
	kinds := map[string]bool{}
	for _, c := range crds {
		g.Expect(c.Spec.Group).To(Or(HaveSuffix(".toolkit.fluxcd.io"), Equal("source.extensions.fluxcd.io")))
		kinds[c.Spec.Names.Kind] = true
	}
	g.Expect(kinds).To(HaveKey("GitRepository"))
	g.Expect(kinds).To(HaveKey("Kustomization"))
}
