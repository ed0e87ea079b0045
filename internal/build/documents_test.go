package build

import (
	"testing"

	. "github.com/onsi/gomega"
	"go.yaml.in/yaml/v3"

	"github.com/windlass-dev/windlass/internal/substitute"
)

// TestObjectsEditCopiesASharedNode: a node in two objects is edited as two
// copies, each as its place says (a string in a ConfigMap's data, a number
// in a Deployment's replicas), as the objects' YAML would be.
func TestObjectsEditCopiesASharedNode(t *testing.T) {
	g := NewWithT(t)
	parse := func(doc string) *yaml.Node {
		var n yaml.Node
		g.Expect(yaml.Unmarshal([]byte(doc), &n)).To(Succeed())
		return n.Content[0]
	}
	cm := parse("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\ndata:\n  n: ${n}\n")
	deploy := parse("apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: a}\nspec:\n  replicas: 1\n")
	shared := cm.Content[7].Content[1]
	deploy.Content[7].Content[1] = shared
	sub, err := substitute.NewBuild(map[string]string{"n": "3"}, true)
	g.Expect(err).NotTo(HaveOccurred())

	objs, err := (&Documents{nodes: []*yaml.Node{cm, deploy}}).Objects(sub.Node)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(objs[0].Object["data"]).To(Equal(map[string]any{"n": "3"}))
	g.Expect(objs[1].Object["spec"]).To(Equal(map[string]any{"replicas": int64(3)}))
	g.Expect(shared.Value).To(Equal("${n}"), "the shared node itself is not edited")
}

// TestObjectsLetTheDocumentsGo: decoded documents are not held.
func TestObjectsLetTheDocumentsGo(t *testing.T) {
	g := NewWithT(t)
	docs := [][]byte{[]byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n")}
	d := FromYAML(docs)
	objs, err := d.Objects(nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(objs).To(HaveLen(1))
	g.Expect(d.yaml).To(Equal([][]byte{nil}))
	g.Expect(docs[0]).NotTo(BeNil(), "the caller's documents stay")
}
