package archive

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
)

// TestFingerprints changes one thing in a tree at a time and checks which
// directories' fingerprints change: those on the path to the change, and no
// other.
func TestFingerprints(t *testing.T) {
	base := map[string]string{
		"apps/a/app.yaml":         "a: 1\n",
		"apps/b/app.yaml":         "b: 1\n",
		"base/kustomization.yaml": "resources: []\n",
		"README.md":               "hello\n",
	}
	tests := []struct {
		name    string
		change  func(t *testing.T, root string)
		filter  Filter
		changed []string
	}{
		{name: "nothing", change: func(*testing.T, string) {}},
		{name: "a file's content", changed: []string{"", "apps", "apps/a"},
			change: func(t *testing.T, root string) { writeTree(t, root, map[string]string{"apps/a/app.yaml": "a: 2\n"}) }},
		{name: "a file added", changed: []string{"", "apps", "apps/b"},
			change: func(t *testing.T, root string) { writeTree(t, root, map[string]string{"apps/b/extra.yaml": "x: 1\n"}) }},
		{name: "a file's mode", changed: []string{"", "base"},
			change: func(t *testing.T, root string) {
				if err := os.Chmod(filepath.Join(root, "base/kustomization.yaml"), 0o755); err != nil {
					t.Fatal(err)
				}
			}},
		{name: "a file renamed", changed: []string{"", "apps", "apps/a"},
			change: func(t *testing.T, root string) {
				if err := os.Rename(filepath.Join(root, "apps/a/app.yaml"), filepath.Join(root, "apps/a/other.yaml")); err != nil {
					t.Fatal(err)
				}
			}},
		{name: "a directory removed", changed: []string{"", "apps", "apps/b"},
			change: func(t *testing.T, root string) {
				if err := os.RemoveAll(filepath.Join(root, "apps/b")); err != nil {
					t.Fatal(err)
				}
			}},
		{name: "a file at the root", changed: []string{""},
			change: func(t *testing.T, root string) { writeTree(t, root, map[string]string{"README.md": "bye\n"}) }},
		{name: "an excluded file", filter: func(rel string, _ bool) bool { return strings.HasSuffix(rel, ".md") },
			change: func(t *testing.T, root string) { writeTree(t, root, map[string]string{"README.md": "bye\n"}) }},
	}
	dirs := []string{"", "apps", "apps/a", "apps/b", "base"}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			root := t.TempDir()
			writeTree(t, root, base)
			before, err := BuildWithFingerprints(io.Discard, root, tt.filter)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(before).To(HaveLen(len(dirs)))
			tt.change(t, root)
			after, err := BuildWithFingerprints(io.Discard, root, tt.filter)
			g.Expect(err).NotTo(HaveOccurred())
			var changed []string
			for _, d := range dirs {
				if before.Changed(after, d) {
					changed = append(changed, d)
				}
			}
			g.Expect(changed).To(Equal(tt.changed))
		})
	}
}

// TestFingerprintsOfLargeTrees checks that a tree with more directories
// than maxFingerprints gets no fingerprints, and that its archive is still
// written.
func TestFingerprintsOfLargeTrees(t *testing.T) {
	g := NewWithT(t)
	defer func(n int) { maxFingerprints = n }(maxFingerprints)
	maxFingerprints = 4
	root := t.TempDir()
	writeTree(t, root, map[string]string{"a/": "", "b/": "", "c/f": "x"})
	fps, err := BuildWithFingerprints(io.Discard, root, nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(fps).To(HaveLen(4), "the root and three directories")
	writeTree(t, root, map[string]string{"d/": ""})
	var out bytes.Buffer
	fps, err = BuildWithFingerprints(&out, root, nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(fps).To(BeNil())
	g.Expect(listTarGz(t, out.Bytes())).To(HaveLen(5), "four directories and a file")
}
