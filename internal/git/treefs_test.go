package git

import (
	"bytes"
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"testing/fstest"

	. "github.com/onsi/gomega"

	"github.com/windlass-dev/windlass/internal/archive"
	"github.com/windlass-dev/windlass/internal/sourceignore"
	"github.com/windlass-dev/windlass/internal/testutil"
)

// TestFiles_ArchiveAsTheCheckout: the artifact of a commit left in memory
// has the bytes and the fingerprints of the artifact of its checkout on
// disk, whole or sparse, with the default ignore rules, the tree's
// .sourceignore files or spec.ignore; and nothing is written to the work
// directory.
func TestFiles_ArchiveAsTheCheckout(t *testing.T) {
	r := newLocalRepo(t, "main")
	r.commit("main", map[string]string{
		// Names that git's tree order and a directory listing sort apart:
		// git sorts a folder as if its name ended with "/".
		"a_":                 "a_\n",
		"a-b/x.yaml":         "x: 1\n",
		"a.b":                "a.b\n",
		"a/c.yaml":           "c: 1\n",
		"a0":                 "a0\n",
		"B":                  "upper\n",
		"ä.yaml":             "umlaut: true\n",
		"empty.txt":          "",
		"img.png":            "not archived by default\n",
		".github/ci.yml":     "not archived by default\n",
		"bin/run.sh":         "#!/bin/sh\n",
		"deep/er/est/f":      "deep\n",
		".sourceignore":      "*.tmp\n",
		"junk.tmp":           "ignored by the root's .sourceignore\n",
		"deep/keep.tmp":      "kept by deep's .sourceignore\n",
		"deep/.sourceignore": "!keep.tmp\n",
	}, "files")
	g := NewWithT(t)
	g.Expect(os.Chmod(filepath.Join(r.dir, "bin/run.sh"), 0o755)).To(Succeed())
	r.git("add", "-A")
	// A submodule entry, without its .gitmodules: an empty folder.
	r.git("update-index", "--add", "--cacheinfo", "160000,"+r.git("rev-parse", "HEAD")+",vendor/sub")
	r.git("commit", "-q", "-m", "a mode and a submodule")

	specIgnore := "/a/\n*.yaml\n"
	tests := []struct {
		name   string
		sparse []string
		ignore *string
		want   []string // some of the entries the artifact must hold
	}{
		{name: "the whole tree", want: []string{"a-b/x.yaml", "a.b", "a/c.yaml", "bin/run.sh", "deep/keep.tmp", "vendor/sub/", "ä.yaml"}},
		{name: "sparse", sparse: []string{"a", "deep/er"}, want: []string{"a/c.yaml", "deep/er/est/f"}},
		{name: "spec.ignore", ignore: &specIgnore, want: []string{"a-b/", "img.png", ".github/ci.yml"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			opts := CheckoutOptions{Branch: "main", SparseCheckoutDirectories: tt.sparse}
			disk, dir := newTestClient(t, nil, nil)
			_, err := disk.Clone(context.Background(), r.url(), opts)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(disk.Files()).To(BeNil(), "written to disk unless asked")

			opts.InMemory = true
			mem, memDir := newTestClient(t, nil, nil)
			_, err = mem.Clone(context.Background(), r.url(), opts)
			g.Expect(err).NotTo(HaveOccurred())
			files := mem.Files()
			g.Expect(files).NotTo(BeNil())
			g.Expect(os.ReadDir(memDir)).To(BeEmpty(), "nothing is written to the work directory")

			want, wantFingerprints := archiveOf(t, archive.Dir(dir), tt.ignore, dir)
			got, gotFingerprints := archiveOf(t, files, tt.ignore, "")
			g.Expect(tarNames(t, want)).To(ContainElements(tt.want), "the reference holds what the case is about")
			g.Expect(bytes.Equal(got, want)).To(BeTrue(), "the same bytes:\n%v\n%v", tarNames(t, got), tarNames(t, want))
			g.Expect(gotFingerprints).To(Equal(wantFingerprints))
		})
	}
}

// archiveOf returns the artifact of tree with the ignore rules, and its
// fingerprints; a tree on disk is built from its directory.
func archiveOf(t *testing.T, tree archive.Tree, ignore *string, dir string) ([]byte, archive.Fingerprints) {
	t.Helper()
	g := NewWithT(t)
	filter, err := sourceignore.NewTreeFilter(tree, ignore)
	g.Expect(err).NotTo(HaveOccurred())
	var buf bytes.Buffer
	var fingerprints archive.Fingerprints
	if dir != "" {
		fingerprints, err = archive.BuildWithFingerprints(&buf, dir, filter)
	} else {
		fingerprints, err = archive.BuildTree(&buf, tree, filter)
	}
	g.Expect(err).NotTo(HaveOccurred())
	return buf.Bytes(), fingerprints
}

// tarNames returns the entry names of a gzip-compressed tarball.
func tarNames(t *testing.T, data []byte) []string {
	t.Helper()
	var names []string
	for _, hdr := range testutil.TarGzHeaders(t, data) {
		names = append(names, hdr.Name)
	}
	return names
}

// TestFiles_FS: the files left in memory behave as a file system.
func TestFiles_FS(t *testing.T) {
	g := NewWithT(t)
	r := newLocalRepo(t, "main")
	r.commit("main", map[string]string{"a/b/c.yaml": "c: 1\n", "a/d": "d\n", "e": "", "bin/x": "#!/bin/sh\n"}, "files")
	g.Expect(os.Chmod(filepath.Join(r.dir, "bin/x"), 0o755)).To(Succeed())
	r.git("add", "-A")
	r.git("commit", "-q", "-m", "mode")
	c, _ := newTestClient(t, nil, nil)
	_, err := c.Clone(context.Background(), r.url(), CheckoutOptions{Branch: "main", InMemory: true})
	g.Expect(err).NotTo(HaveOccurred())
	files := c.Files()
	g.Expect(fstest.TestFS(files, "a/b/c.yaml", "a/d", "e", "bin/x")).To(Succeed())
	info, err := fs.Stat(files, "bin/x")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(info.Mode()).To(Equal(fs.FileMode(0o755)))
	g.Expect(fs.ReadFile(files, "a/b/c.yaml")).To(BeEquivalentTo("c: 1\n"))
	_, err = files.Open("a/missing")
	g.Expect(err).To(MatchError(fs.ErrNotExist))

	c.Close()
	g.Expect(c.Files()).To(BeNil(), "closed")
}

// TestFiles_LinksAreWritten: a tree with a symbolic link is written to the
// work directory even when asked to stay in memory, since only a
// directory on disk resolves links as the archive does.
func TestFiles_LinksAreWritten(t *testing.T) {
	g := NewWithT(t)
	r := newLocalRepo(t, "main")
	r.commit("main", map[string]string{"apps/a.yaml": "a: 1\n"}, "files")
	g.Expect(os.Symlink("apps/a.yaml", filepath.Join(r.dir, "current.yaml"))).To(Succeed())
	r.git("add", "-A")
	r.git("commit", "-q", "-m", "a link")
	c, dir := newTestClient(t, nil, nil)
	_, err := c.Clone(context.Background(), r.url(), CheckoutOptions{Branch: "main", InMemory: true})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(c.Files()).To(BeNil())
	g.Expect(os.Readlink(filepath.Join(dir, "current.yaml"))).To(Equal("apps/a.yaml"))
	g.Expect(os.ReadFile(filepath.Join(dir, "apps/a.yaml"))).To(BeEquivalentTo("a: 1\n"))
}
