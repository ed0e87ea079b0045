package substitute_test

import (
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/windlass-dev/windlass/internal/build"
	"github.com/windlass-dev/windlass/internal/substitute"
)

// TestBuildSubstituteDecode runs the pipeline the controller uses: build,
// substitute each document's nodes, decode.
func TestBuildSubstituteDecode(t *testing.T) {
	g := NewWithT(t)
	root := t.TempDir()
	files := map[string]string{
		"kustomization.yaml": "resources: [deploy.yaml]\n",
		"deploy.yaml": `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  labels:
    version: "${version}"
  annotations:
    enabled: "${enabled}"
spec:
  replicas: ${replicas}
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: web
        image: nginx:${tag:=latest}
        env:
        - name: NOTE
          value: ${note}
`,
	}
	for name, content := range files {
		g.Expect(os.WriteFile(filepath.Join(root, name), []byte(content), 0o644)).To(Succeed())
	}
	docs, err := build.BuildDocuments(root, ".", build.Options{NamePrefix: "${prefix}-"})
	g.Expect(err).NotTo(HaveOccurred())
	vars := substitute.Vars(
		map[string]string{"version": "1.0", "enabled": "true", "replicas": "1", "prefix": "p"},
		map[string]string{"replicas": "2", "note": "a: b # c"},
	)
	sub, err := substitute.NewBuild(vars, true)
	g.Expect(err).NotTo(HaveOccurred())
	objs, err := docs.Objects(sub.Node)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(objs).To(HaveLen(1))
	d := objs[0]
	g.Expect(d.GetName()).To(Equal("p-web"))
	g.Expect(d.GetLabels()).To(HaveKeyWithValue("version", "1.0"))
	g.Expect(d.GetAnnotations()).To(HaveKeyWithValue("enabled", "true"))
	r, _, _ := unstructured.NestedInt64(d.Object, "spec", "replicas")
	g.Expect(r).To(Equal(int64(2)))
	cs, _, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "containers")
	c := cs[0].(map[string]any)
	g.Expect(c["image"]).To(Equal("nginx:latest"))
	g.Expect(c["env"]).To(Equal([]any{map[string]any{"name": "NOTE", "value": "a: b # c"}}))
}
