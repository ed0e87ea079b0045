package restmap

import (
	"fmt"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// countingMapper is a DefaultRESTMapper that counts the RESTMapping
// questions it is asked and the times it is reset.
type countingMapper struct {
	*meta.DefaultRESTMapper
	asked, resets int
}

func (c *countingMapper) RESTMapping(gk schema.GroupKind, versions ...string) (*meta.RESTMapping, error) {
	c.asked++
	return c.DefaultRESTMapper.RESTMapping(gk, versions...)
}

func (c *countingMapper) Reset() { c.resets++ }

var (
	deployments = schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}
	widgetsV1   = schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"}
	widgetsV2   = schema.GroupVersionKind{Group: "example.com", Version: "v2", Kind: "Widget"}
)

func newCounting(kinds ...schema.GroupVersionKind) *countingMapper {
	var gvs []schema.GroupVersion
	for _, k := range kinds {
		gvs = append(gvs, k.GroupVersion())
	}
	c := &countingMapper{DefaultRESTMapper: meta.NewDefaultRESTMapper(gvs)}
	for _, k := range kinds {
		c.Add(k, meta.RESTScopeNamespace)
	}
	return c
}

func TestMapper_KeepsWhatWasFound(t *testing.T) {
	g := NewWithT(t)
	inner := newCounting(deployments, widgetsV1, widgetsV2)
	m := New(inner)

	first, err := m.RESTMapping(deployments.GroupKind(), "v1")
	g.Expect(err).NotTo(HaveOccurred())
	again, err := m.RESTMapping(deployments.GroupKind(), "v1")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(inner.asked).To(Equal(1), "the second question is answered from the kept mapping")
	g.Expect(again.Resource).To(Equal(schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}))
	g.Expect(again.GroupVersionKind).To(Equal(deployments))
	g.Expect(again.Scope.Name()).To(Equal(meta.RESTScopeNameNamespace))
	g.Expect(again).NotTo(BeIdenticalTo(first))

	again.Resource.Resource = "changed by the caller"
	third, err := m.RESTMapping(deployments.GroupKind(), "v1")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(third.Resource.Resource).To(Equal("deployments"), "a caller's change does not reach the kept mapping")

	v2, err := m.RESTMapping(widgetsV1.GroupKind(), "v2")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(v2.GroupVersionKind).To(Equal(widgetsV2))
	v1, err := m.RESTMapping(widgetsV1.GroupKind(), "v1")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(v1.GroupVersionKind).To(Equal(widgetsV1), "each list of versions is its own question")
	g.Expect(inner.asked).To(Equal(3))
}

func TestMapper_AsksAgainAfterAMiss(t *testing.T) {
	g := NewWithT(t)
	inner := newCounting(deployments)
	m := New(inner)

	_, err := m.RESTMapping(widgetsV1.GroupKind(), "v1")
	g.Expect(meta.IsNoMatchError(err)).To(BeTrue(), "got %v", err)

	inner.Add(widgetsV1, meta.RESTScopeRoot)
	found, err := m.RESTMapping(widgetsV1.GroupKind(), "v1")
	g.Expect(err).NotTo(HaveOccurred(), "a kind that appears is found: misses are not kept")
	g.Expect(found.Scope.Name()).To(Equal(meta.RESTScopeNameRoot))
	g.Expect(inner.asked).To(Equal(2))
}

func TestMapper_ResetForgets(t *testing.T) {
	g := NewWithT(t)
	inner := newCounting(deployments)
	m := New(inner)

	_, err := m.RESTMapping(deployments.GroupKind())
	g.Expect(err).NotTo(HaveOccurred())
	m.Reset()
	g.Expect(inner.resets).To(Equal(1), "the wrapped mapper is reset too")
	_, err = m.RESTMapping(deployments.GroupKind())
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(inner.asked).To(Equal(2), "after Reset the wrapped mapper is asked again")
}

func TestMapper_KeepsAtMostItsBound(t *testing.T) {
	g := NewWithT(t)
	var kinds []schema.GroupVersionKind
	for i := range maxMappings + 10 {
		kinds = append(kinds, schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: fmt.Sprintf("Kind%d", i)})
	}
	m := New(newCounting(kinds...))
	for _, k := range kinds {
		_, err := m.RESTMapping(k.GroupKind(), k.Version)
		g.Expect(err).NotTo(HaveOccurred())
	}
	g.Expect(len(m.mappings)).To(BeNumerically("<=", maxMappings))
	g.Expect(m.mappings).To(HaveKey(mappingKey{kind: kinds[len(kinds)-1].GroupKind(), versions: "v1"}))
}
