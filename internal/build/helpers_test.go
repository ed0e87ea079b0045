package build

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// writeTree creates files under dir; a value starting with "link:" makes a
// symbolic link to the rest of the value instead.
func writeTree(t testing.TB, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if target, ok := strings.CutPrefix(content, "link:"); ok {
			if err := os.Symlink(target, p); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// newRoot returns a fresh artifact root inside a parent directory, so tests
// can place files beside (outside) the root.
func newRoot(t testing.TB) (parent, root string) {
	t.Helper()
	parent = t.TempDir()
	root = filepath.Join(parent, "artifact")
	if err := os.Mkdir(root, 0o755); err != nil {
		t.Fatal(err)
	}
	return parent, root
}

func configMap(name string) string {
	return "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: " + name + "\ndata:\n  key: value\n"
}

const deployment = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  labels:
    app: web
spec:
  replicas: 1
  selector:
    matchLabels:
      app: web
  template:
    metadata:
      labels:
        app: web
    spec:
      containers:
      - name: web
        image: nginx:1.25
`

// names returns kind/name (or kind/namespace/name) for each object.
func names(objs []*unstructured.Unstructured) []string {
	var out []string
	for _, o := range objs {
		id := o.GetKind() + "/"
		if ns := o.GetNamespace(); ns != "" {
			id += ns + "/"
		}
		out = append(out, id+o.GetName())
	}
	return out
}

// buildWithin runs Build and fails the test if it does not return in time.
func buildWithin(t *testing.T, d time.Duration, root, path string, opts Options) ([]*unstructured.Unstructured, error) {
	t.Helper()
	type result struct {
		objs []*unstructured.Unstructured
		err  error
	}
	ch := make(chan result, 1)
	go func() {
		objs, err := Build(root, path, opts)
		ch <- result{objs, err}
	}()
	select {
	case r := <-ch:
		return r.objs, r.err
	case <-time.After(d):
		t.Fatalf("build of %q did not finish within %s", path, d)
		return nil, nil
	}
}

func find(g Gomega, objs []*unstructured.Unstructured, kind, name string) *unstructured.Unstructured {
	for _, o := range objs {
		if o.GetKind() == kind && o.GetName() == name {
			return o
		}
	}
	g.Expect(names(objs)).To(ContainElement(kind + "/" + name))
	return nil
}
