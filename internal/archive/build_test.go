package archive

import (
	"archive/tar"
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

func TestBuildEntries(t *testing.T) {
	g := NewWithT(t)
	root := t.TempDir()
	writeTree(t, root, map[string]string{
		"b.yaml":           "b",
		"a/z.txt":          "z",
		"a/a.txt":          "a",
		"a.txt":            "top",
		"empty/":           "",
		"deploy/run.sh":    "#!/bin/sh\n",
		"deploy/config.md": "cfg",
	})
	g.Expect(os.Chmod(filepath.Join(root, "deploy/run.sh"), 0o700)).To(Succeed())
	g.Expect(os.Chmod(filepath.Join(root, "b.yaml"), 0o600)).To(Succeed())
	g.Expect(os.Chmod(filepath.Join(root, "a/z.txt"), 0o666)).To(Succeed())
	g.Expect(os.Chmod(filepath.Join(root, "empty"), 0o700)).To(Succeed())

	got := listTarGz(t, buildBytes(t, root, nil))
	g.Expect(got).To(Equal([]listedEntry{
		{Name: "a/", Type: tar.TypeDir, Mode: 0o755},
		{Name: "a/a.txt", Type: tar.TypeReg, Mode: 0o644, Content: "a"},
		{Name: "a/z.txt", Type: tar.TypeReg, Mode: 0o644, Content: "z"},
		{Name: "a.txt", Type: tar.TypeReg, Mode: 0o644, Content: "top"},
		{Name: "b.yaml", Type: tar.TypeReg, Mode: 0o644, Content: "b"},
		{Name: "deploy/", Type: tar.TypeDir, Mode: 0o755},
		{Name: "deploy/config.md", Type: tar.TypeReg, Mode: 0o644, Content: "cfg"},
		{Name: "deploy/run.sh", Type: tar.TypeReg, Mode: 0o755, Content: "#!/bin/sh\n"},
		{Name: "empty/", Type: tar.TypeDir, Mode: 0o755},
	}))
}

func TestBuildReproducible(t *testing.T) {
	tree := map[string]string{
		"kustomization.yaml": "resources: [a.yaml]\n",
		"a.yaml":             "kind: ConfigMap\n",
		"nested/deep/x.yaml": "x",
		"nested/empty/":      "",
		strings.Repeat("long-name-", 15) + "/" + strings.Repeat("f", 120): "long",
	}
	mutations := []struct {
		name   string
		mutate func(t *testing.T, root string)
	}{
		{name: "unchanged", mutate: func(*testing.T, string) {}},
		{name: "touched mtimes", mutate: func(t *testing.T, root string) {
			future := time.Now().Add(48 * time.Hour)
			for _, p := range []string{"a.yaml", "nested", "nested/deep/x.yaml", "."} {
				if err := os.Chtimes(filepath.Join(root, p), future, future); err != nil {
					t.Fatal(err)
				}
			}
		}},
		{name: "group writable, non-exec mode change", mutate: func(t *testing.T, root string) {
			if err := os.Chmod(filepath.Join(root, "a.yaml"), 0o664); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "rewritten with the same content", mutate: func(t *testing.T, root string) {
			if err := os.Remove(filepath.Join(root, "a.yaml")); err != nil {
				t.Fatal(err)
			}
			writeTree(t, root, map[string]string{"a.yaml": "kind: ConfigMap\n"})
		}},
	}
	first := t.TempDir()
	writeTree(t, first, tree)
	want := buildBytes(t, first, nil)
	for _, m := range mutations {
		t.Run(m.name, func(t *testing.T) {
			g := NewWithT(t)
			root := t.TempDir()
			writeTree(t, root, tree)
			m.mutate(t, root)
			g.Expect(buildBytes(t, root, nil)).To(Equal(want))
			g.Expect(buildBytes(t, root, nil)).To(Equal(want), "second build of the same tree")
		})
	}
}

func TestBuildFilter(t *testing.T) {
	g := NewWithT(t)
	root := t.TempDir()
	writeTree(t, root, map[string]string{
		".git/config":      "secret",
		".git/objects/x":   "obj",
		"keep/a.yaml":      "a",
		"keep/skip.png":    "png",
		"drop/inner/b.txt": "b",
	})
	var visited []string
	filter := func(rel string, isDir bool) bool {
		visited = append(visited, rel)
		return (isDir && (rel == ".git" || rel == "drop")) || strings.HasSuffix(rel, ".png")
	}
	got := listTarGz(t, buildBytes(t, root, filter))
	var names []string
	for _, e := range got {
		names = append(names, e.Name)
	}
	g.Expect(names).To(Equal([]string{"keep/", "keep/a.yaml"}))
	g.Expect(visited).To(ConsistOf(".git", "drop", "keep", "keep/a.yaml", "keep/skip.png"),
		"excluded directories must not be descended")
}

func TestBuildSymlinks(t *testing.T) {
	outside := t.TempDir()
	writeTree(t, outside, map[string]string{"secret": "token"})
	root := t.TempDir()
	writeTree(t, root, map[string]string{"real/file.yaml": "inside", "dir/": ""})

	tests := []struct {
		name    string
		link    string // relative to root
		target  string
		want    bool
		content string
	}{
		{name: "relative to file inside", link: "rel.yaml", target: "real/file.yaml", want: true, content: "inside"},
		{name: "relative with dot-dot staying inside", link: "dir/up.yaml", target: "../real/file.yaml", want: true, content: "inside"},
		{name: "chain inside", link: "chain.yaml", target: "rel.yaml", want: true, content: "inside"},
		{name: "absolute to file inside", link: "abs-in.yaml", target: filepath.Join(root, "real/file.yaml"), want: true, content: "inside"},
		{name: "relative escaping root", link: "escape", target: "../" + filepath.Base(outside) + "/secret"},
		{name: "absolute outside root", link: "abs-out", target: filepath.Join(outside, "secret")},
		{name: "etc passwd", link: "passwd", target: "/etc/passwd"},
		{name: "chain leaving root", link: "chain-out", target: "abs-out"},
		{name: "dangling", link: "dangling", target: "missing.yaml"},
		{name: "to directory inside", link: "dirlink", target: "real"},
		{name: "to root", link: "rootlink", target: "."},
		{name: "loop", link: "loop-a", target: "loop-b"},
		{name: "loop partner", link: "loop-b", target: "loop-a"},
	}
	for _, tt := range tests {
		if err := os.Symlink(tt.target, filepath.Join(root, tt.link)); err != nil {
			t.Fatal(err)
		}
	}
	entries := map[string]listedEntry{}
	for _, e := range listTarGz(t, buildBytes(t, root, nil)) {
		entries[e.Name] = e
		NewWithT(t).Expect(e.Type == tar.TypeReg || e.Type == tar.TypeDir).To(BeTrue(), "entry %s has type %q", e.Name, e.Type)
		NewWithT(t).Expect(e.Content).NotTo(Equal("token"))
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			e, ok := entries[tt.link]
			g.Expect(ok).To(Equal(tt.want))
			if tt.want {
				g.Expect(e.Type).To(Equal(byte(tar.TypeReg)))
				g.Expect(e.Content).To(Equal(tt.content))
			}
		})
	}
}

func TestBuildRootErrors(t *testing.T) {
	base := t.TempDir()
	writeTree(t, base, map[string]string{"file": "x"})
	tests := []struct {
		name string
		root string
	}{
		{name: "missing", root: filepath.Join(base, "missing")},
		{name: "regular file", root: filepath.Join(base, "file")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			var buf bytes.Buffer
			g.Expect(Build(&buf, tt.root, nil)).To(HaveOccurred())
		})
	}
}

func TestBuildRootThroughSymlink(t *testing.T) {
	g := NewWithT(t)
	real := t.TempDir()
	writeTree(t, real, map[string]string{"a.yaml": "a"})
	if err := os.Symlink("a.yaml", filepath.Join(real, "b.yaml")); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(t.TempDir(), "root")
	g.Expect(os.Symlink(real, link)).To(Succeed())
	g.Expect(buildBytes(t, link, nil)).To(Equal(buildBytes(t, real, nil)))
	g.Expect(listTarGz(t, buildBytes(t, link, nil))).To(HaveLen(2))
}

func TestBuildBackslashName(t *testing.T) {
	g := NewWithT(t)
	root := t.TempDir()
	writeTree(t, root, map[string]string{`dir/a\b.yaml`: "x"})
	var buf bytes.Buffer
	err := Build(&buf, root, nil)
	g.Expect(err).To(MatchError(ContainSubstring("backslash")))

	buf.Reset()
	g.Expect(Build(&buf, root, func(rel string, _ bool) bool { return strings.Contains(rel, `\`) })).To(Succeed())
}

func TestBuildExtractRoundTrip(t *testing.T) {
	g := NewWithT(t)
	tree := map[string]string{
		"a.yaml":          "a",
		"x/y/z.yaml":      "z",
		"x/empty/":        "",
		"unicode-ü/ß.txt": "ß",
		"big.bin":         strings.Repeat("0123456789", 100_000),
	}
	root := t.TempDir()
	writeTree(t, root, tree)
	data := buildBytes(t, root, nil)

	dst := filepath.Join(t.TempDir(), "out")
	g.Expect(Extract(bytes.NewReader(data), dst)).To(Succeed())
	g.Expect(readTree(t, dst)).To(Equal(readTree(t, root)))
	g.Expect(buildBytes(t, dst, nil)).To(Equal(data), "rebuilding the extracted tree gives the same bytes")
}
