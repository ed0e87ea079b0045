package build

import (
	"errors"
	"testing"

	. "github.com/onsi/gomega"
)

// TestDecodeNamesTheObject: a document that does not decode (a duplicate
// key) is named by its object, on one line.
func TestDecodeNamesTheObject(t *testing.T) {
	g := NewWithT(t)
	_, err := Decode([][]byte{
		[]byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ok\n"),
		[]byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web\n  namespace: demo\ndata:\n  extra: a\n  extra: b\n"),
	})
	g.Expect(err).To(MatchError(`ConfigMap demo/web (document 1 of the build): yaml: line 8: mapping key "extra" already defined at line 7`))
}

// TestLocateNamesTheFile: a document that does not decode is traced back
// to the file it comes from.
func TestLocateNamesTheFile(t *testing.T) {
	g := NewWithT(t)
	root := t.TempDir()
	writeTree(t, root, map[string]string{
		"app/kustomization.yaml": "resources: [ok.yaml, sub/web.yaml]\n",
		"app/ok.yaml":            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ok\n  namespace: demo\n",
		"app/sub/web.yaml":       duplicateKey,
	})
	docs, err := BuildYAML(root, "app", Options{})
	g.Expect(err).NotTo(HaveOccurred())
	_, err = Decode(docs)
	g.Expect(err).To(MatchError(`ConfigMap demo/web (document 1 of the build): yaml: line 8: mapping key "extra" already defined at line 7`))
	err = Locate(err, root, "app", Options{})
	g.Expect(err).To(MatchError(`ConfigMap demo/web in app/sub/web.yaml (document 1 of the build): yaml: line 8: mapping key "extra" already defined at line 7`))
	var de *DecodeError
	g.Expect(errors.As(err, &de)).To(BeTrue())
	g.Expect(Locate(errors.New("other"), root, "app", Options{})).To(MatchError("other"))
}

// TestGenerateRefusesDuplicateKeys: a folder without a kustomization whose
// manifest has a duplicate key is an error that names the file, not a file
// left out (and then pruned).
func TestGenerateRefusesDuplicateKeys(t *testing.T) {
	g := NewWithT(t)
	root := t.TempDir()
	writeTree(t, root, map[string]string{"app/ok.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ok\n", "app/web.yaml": duplicateKey})
	_, err := Generate(root, "app")
	g.Expect(err).To(MatchError(ContainSubstring(`"app/web.yaml": not valid YAML: yaml: unmarshal errors: line 8: mapping key "extra" already defined at line 7`)))
	g.Expect(err.Error()).NotTo(ContainSubstring("\n"))
}

// duplicateKey is a ConfigMap with the key extra twice.
const duplicateKey = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web\n  namespace: demo\ndata:\n  extra: a\n  extra: b\n"

// TestDocumentsNameTheSourceLines: a document of a build in this process
// that does not decode names the lines of the file it was read from.
func TestDocumentsNameTheSourceLines(t *testing.T) {
	g := NewWithT(t)
	root := t.TempDir()
	writeTree(t, root, map[string]string{
		"app/kustomization.yaml": "resources: [web.yaml]\nnamePrefix: p-\n",
		"app/web.yaml":           "# a comment\n\n" + duplicateKey,
	})
	docs, err := BuildDocuments(root, "app", Options{})
	g.Expect(err).NotTo(HaveOccurred())
	_, err = docs.Objects(nil)
	g.Expect(err).To(MatchError(`ConfigMap demo/p-web (document 0 of the build): yaml: line 10: mapping key "extra" already defined at line 9`))
	err = Locate(err, root, "app", Options{})
	g.Expect(err).To(MatchError(ContainSubstring("in app/web.yaml (document 0")))
}
