package build

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const fuzzMarker = "OUTSIDE-ROOT-MARKER"

// FuzzBuild builds arbitrary kustomization files in a tree that has
// tempting targets outside root. No panic may escape Build, no file content
// outside root may be read, and nothing from outside root may appear in the
// output or in an error.
func FuzzBuild(f *testing.F) {
	seeds := []string{
		"resources: [cm.yaml]\n",
		"resources: [../base]\nnamePrefix: x-\n",
		"resources: [../../outside]\n",
		"resources: [/etc/passwd]\n",
		"resources: [escape]\n",
		"resources: [.]\n",
		"resources:\n- github.com/org/repo//x?ref=v1\n",
		"configMapGenerator:\n- name: x\n  files: [../../outside/secret.txt]\n",
		"secretGenerator:\n- name: x\n  files: [link.txt]\n",
		"patches:\n- path: ../../outside/cm.yaml\n",
		"components: [../base]\n",
		"transformers:\n- |\n  apiVersion: builtin\n  kind: PatchTransformer\n  metadata: {name: p}\n  path: ../../outside/cm.yaml\n",
		"openapi:\n  path: ../../outside/secret.txt\n",
		"resources: [cm.yaml]\nreplacements:\n- path: ../../outside/cm.yaml\n",
		"helmCharts:\n- name: x\n  valuesFile: ../../outside/secret.txt\n",
		"crds: [../../outside/cm.yaml]\n",
		"{",
	}
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, kust []byte) {
		parent := t.TempDir()
		root := filepath.Join(parent, "root")
		writeTree(t, parent, map[string]string{
			"outside/kustomization.yaml": "resources: [cm.yaml]\n",
			"outside/cm.yaml":            configMap(strings.ToLower(fuzzMarker)) + "  marker: " + fuzzMarker + "\n",
			"outside/secret.txt":         fuzzMarker,
		})
		writeTree(t, root, map[string]string{
			"app/cm.yaml":             configMap("app"),
			"app/escape":              "link:../../outside",
			"app/link.txt":            "link:../../outside/secret.txt",
			"base/kustomization.yaml": "resources: [cm.yaml]\n",
			"base/cm.yaml":            configMap("base"),
		})
		if err := os.WriteFile(filepath.Join(root, "app", "kustomization.yaml"), kust, 0o644); err != nil {
			t.Fatal(err)
		}
		realRoot, err := filepath.EvalSymlinks(root)
		if err != nil {
			t.Fatal(err)
		}
		var reads []string
		readHook = func(p string) { reads = append(reads, p) }
		defer func() { readHook = nil }()

		docs, err := buildYAMLWithin(t, root, "app")
		for _, r := range reads {
			if !within(realRoot, r) {
				t.Fatalf("read %q outside root", r)
			}
		}
		if err != nil && strings.Contains(strings.ToUpper(err.Error()), fuzzMarker) {
			t.Fatalf("error leaks content from outside root: %v", err)
		}
		for _, d := range docs {
			if bytes.Contains(bytes.ToUpper(d), []byte(fuzzMarker)) {
				t.Fatalf("output holds content from outside root:\n%s", d)
			}
		}
	})
}

func buildYAMLWithin(t *testing.T, root, path string) ([][]byte, error) {
	t.Helper()
	type result struct {
		docs [][]byte
		err  error
	}
	ch := make(chan result, 1)
	go func() {
		docs, err := BuildYAML(root, path, Options{})
		ch <- result{docs, err}
	}()
	select {
	case r := <-ch:
		return r.docs, r.err
	case <-time.After(30 * time.Second):
		t.Fatalf("build did not finish within 30s")
		return nil, nil
	}
}
