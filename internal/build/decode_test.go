package build

import (
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
