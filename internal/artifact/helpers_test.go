package artifact

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/windlass-dev/windlass/api/meta"
)

const testAddr = "storage.windlass-system.svc.cluster.local."

// newStorage returns a Storage in a fresh temporary directory.
func newStorage(t *testing.T) *Storage {
	t.Helper()
	s, err := New(filepath.Join(t.TempDir(), "data"), testAddr, time.Minute, 2)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return s
}

// obj returns object metadata for NewArtifactFor.
func obj(namespace, name string) *metav1.ObjectMeta {
	return &metav1.ObjectMeta{Namespace: namespace, Name: name}
}

// writeTree creates files under root; keys are slash-separated paths.
func writeTree(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// sourceTree writes a small source tree and returns its root.
func sourceTree(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	writeTree(t, root, map[string]string{
		"kustomization.yaml":     "resources: [apps]\n",
		"apps/deploy.yaml":       "kind: Deployment\n",
		"apps/base/service.yaml": "kind: Service\n",
		"infra/ns.yaml":          "kind: Namespace\n",
	})
	return root
}

// storedArtifact archives a source tree into a new artifact.
func storedArtifact(t *testing.T, s *Storage, fileName string) meta.Artifact {
	t.Helper()
	a := s.NewArtifactFor("GitRepository", obj("default", "podinfo"), "main@sha1:abc", fileName)
	if err := s.Archive(&a, sourceTree(t), nil); err != nil {
		t.Fatalf("Archive: %v", err)
	}
	return a
}

// listDir returns the names in dir.
func listDir(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	names := []string{}
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}
