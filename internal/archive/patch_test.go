package archive

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

// TestPatch changes a tree one way at a time and patches the extraction of
// its first archive with its second: the patched tree is the one Extract
// writes from the second archive, file modes included, and what the change
// did not touch is left as it was, not written again.
func TestPatch(t *testing.T) {
	base := map[string]string{
		"apps/a/app.yaml":          "a: 1\n",
		"apps/b/app.yaml":          "b: 1\n",
		"apps/b/deep/config.yaml":  "deep: 1\n",
		"base/kustomization.yaml":  "resources: []\n",
		"README.md":                "hello\n",
		"untouched/service.yaml":   "kind: Service\n",
		"untouched/nested/x.yaml":  "x: 1\n",
		"apps/c/kustomization.yml": "resources: []\n",
	}
	write := func(files map[string]string) func(*testing.T, string) {
		return func(t *testing.T, root string) { writeTree(t, root, files) }
	}
	remove := func(name string) func(*testing.T, string) {
		return func(t *testing.T, root string) {
			if err := os.RemoveAll(filepath.Join(root, filepath.FromSlash(name))); err != nil {
				t.Fatal(err)
			}
		}
	}
	tests := []struct {
		name   string
		change func(t *testing.T, root string)
	}{
		{name: "nothing", change: func(*testing.T, string) {}},
		{name: "a file's content", change: write(map[string]string{"apps/a/app.yaml": "a: 2\n"})},
		{name: "a file added", change: write(map[string]string{"apps/b/extra.yaml": "x: 1\n"})},
		{name: "a file at the root", change: write(map[string]string{"README.md": "changed\n"})},
		{name: "a deep file", change: write(map[string]string{"apps/b/deep/config.yaml": "deep: 2\n"})},
		{name: "a file removed", change: remove("apps/b/app.yaml")},
		{name: "a folder removed", change: remove("apps/b")},
		{name: "a folder added", change: write(map[string]string{"apps/d/app.yaml": "d: 1\n", "apps/d/sub/": ""})},
		{name: "a file's mode", change: func(t *testing.T, root string) {
			if err := os.Chmod(filepath.Join(root, "base/kustomization.yaml"), 0o755); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "a folder becomes a file", change: func(t *testing.T, root string) {
			remove("apps/b")(t, root)
			write(map[string]string{"apps/b": "now a file\n"})(t, root)
		}},
		{name: "a file becomes a folder", change: func(t *testing.T, root string) {
			remove("README.md")(t, root)
			write(map[string]string{"README.md/index.md": "now a folder\n"})(t, root)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			src, patched, fresh := t.TempDir(), t.TempDir(), t.TempDir()
			writeTree(t, src, base)
			before, beforeFPs := buildWithFingerprints(t, src)
			g.Expect(Extract(bytes.NewReader(before), patched)).To(Succeed())
			untouched := filepath.Join(patched, "untouched/nested/x.yaml")
			longAgo := time.Date(2001, time.January, 1, 0, 0, 0, 0, time.UTC)
			g.Expect(os.Chtimes(untouched, longAgo, longAgo)).To(Succeed())

			tt.change(t, src)
			after, afterFPs := buildWithFingerprints(t, src)
			g.Expect(Patch(bytes.NewReader(after), patched, beforeFPs, afterFPs)).To(Succeed())
			g.Expect(Extract(bytes.NewReader(after), fresh)).To(Succeed())

			g.Expect(readTree(t, patched)).To(Equal(readTree(t, fresh)))
			g.Expect(modes(t, patched)).To(Equal(modes(t, fresh)))
			fi, err := os.Stat(untouched)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(fi.ModTime()).To(BeTemporally("==", longAgo), "a folder the change did not touch is not written again")
		})
	}
}

// TestPatchChecksEveryEntry: an entry Extract refuses is refused by Patch
// too, even in a folder whose fingerprint did not change, and the size cap
// counts the entries Patch does not write.
func TestPatchChecksEveryEntry(t *testing.T) {
	g := NewWithT(t)
	same := Fingerprints{"": 1, "kept": 2}
	changedRoot := Fingerprints{"": 3, "kept": 2}

	root := t.TempDir()
	unsafe := makeTarGz(t, dir("kept/", 0o755), file("kept/../../escape", "x", 0o644))
	g.Expect(Patch(bytes.NewReader(unsafe), root, same, changedRoot)).To(MatchError(ErrUnsafeEntry))
	g.Expect(filepath.Join(filepath.Dir(root), "escape")).NotTo(BeAnExistingFile())

	large := makeTarGz(t, dir("kept/", 0o755), file("kept/big", string(bytes.Repeat([]byte("a"), 4096)), 0o644), file("small", "b", 0o644))
	g.Expect(Patch(bytes.NewReader(large), root, same, changedRoot, WithMaxSize(1024))).To(MatchError(ErrTooLarge))
	g.Expect(filepath.Join(root, "kept", "big")).NotTo(BeAnExistingFile(), "the unchanged folder is not written")
}

// buildWithFingerprints archives root and returns the archive and the
// fingerprints of its folders.
func buildWithFingerprints(t testing.TB, root string) ([]byte, Fingerprints) {
	t.Helper()
	var buf bytes.Buffer
	fps, err := BuildWithFingerprints(&buf, root, nil)
	if err != nil {
		t.Fatalf("BuildWithFingerprints: %v", err)
	}
	return buf.Bytes(), fps
}

// modes returns the permission bits of every entry under root.
func modes(t testing.TB, root string) map[string]os.FileMode {
	t.Helper()
	out := map[string]os.FileMode{}
	err := filepath.Walk(root, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		out[filepath.ToSlash(rel)] = fi.Mode()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
