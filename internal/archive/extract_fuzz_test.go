package archive

import (
	"archive/tar"
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// FuzzExtract feeds arbitrary bytes to Extract and checks that it never
// panics, never writes outside the destination and never creates anything
// but directories and regular files.
func FuzzExtract(f *testing.F) {
	seeds := [][]tarEntry{
		{dir("dir/", 0o755), file("dir/a.yaml", "kind: ConfigMap\n", 0o644), file("b", "b", 0o755)},
		{file("../escape", "x", 0o644)},
		{file("/abs/path", "x", 0o644)},
		{file(`a\..\..\b`, "x", 0o644)},
		{special(tar.TypeSymlink, "link", "/etc/passwd"), file("link/x", "x", 0o644)},
		{file("a", "x", 0o644), special(tar.TypeLink, "b", "../a")},
		{special(tar.TypeChar, "null", "")},
		{dir("locked/", 0o000), file("locked/f", "x", 0o4777)},
	}
	for _, entries := range seeds {
		f.Add(makeTarGz(f, entries...))
	}
	f.Add([]byte{0x1f, 0x8b})
	f.Fuzz(func(t *testing.T, data []byte) {
		parent := t.TempDir()
		out := filepath.Join(parent, "out")
		_ = Extract(bytes.NewReader(data), out, WithMaxSize(1<<20))
		onlyChild(t, parent, "out")
		checkOnlyDirsAndFiles(t, out)
		// Extracted trees can always be removed by their owner.
		if err := os.RemoveAll(out); err != nil {
			t.Fatalf("removing extracted tree: %v", err)
		}
	})
}

// checkOnlyDirsAndFiles fails when root holds anything but directories and
// regular files.
func checkOnlyDirsAndFiles(t *testing.T, root string) {
	t.Helper()
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if os.IsNotExist(err) && p == root {
				return nil
			}
			return err
		}
		if !d.IsDir() && !d.Type().IsRegular() {
			t.Errorf("%s has type %s", p, d.Type())
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
