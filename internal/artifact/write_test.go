package artifact

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	. "github.com/onsi/gomega"

	"github.com/windlass-dev/windlass/api/meta"
	"github.com/windlass-dev/windlass/internal/archive"
)

func TestArchiveSetsFields(t *testing.T) {
	g := NewWithT(t)
	s := newStorage(t)
	before := time.Now().Add(-time.Second)
	a := storedArtifact(t, s, "a.tar.gz")

	data, err := os.ReadFile(s.LocalPath(a))
	g.Expect(err).NotTo(HaveOccurred())
	want, err := Digest(bytes.NewReader(data))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(a.Digest).To(Equal(want))
	g.Expect(a.Size).NotTo(BeNil())
	g.Expect(*a.Size).To(Equal(int64(len(data))))
	g.Expect(a.LastUpdateTime.Time).To(BeTemporally(">", before))
	g.Expect(s.Verify(a)).To(Succeed())

	fi, err := os.Stat(s.LocalPath(a))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(fi.Mode().Perm()).To(Equal(os.FileMode(fileMode)))
	g.Expect(listDir(t, filepath.Dir(s.LocalPath(a)))).To(Equal([]string{"a.tar.gz"}), "no temporary file is left behind")
}

func TestArchiveReproducible(t *testing.T) {
	files := map[string]string{
		"kustomization.yaml": "resources: [a.yaml]\n",
		"a.yaml":             "kind: ConfigMap\n",
		"nested/b.yaml":      "kind: Secret\n",
	}
	tests := []struct {
		name   string
		mutate func(t *testing.T, root string)
	}{
		{name: "same tree twice", mutate: func(*testing.T, string) {}},
		{name: "touched mtimes", mutate: func(t *testing.T, root string) {
			old := time.Date(2001, 2, 3, 4, 5, 6, 0, time.UTC)
			for _, p := range []string{"a.yaml", "nested", "nested/b.yaml"} {
				if err := os.Chtimes(filepath.Join(root, p), old, old); err != nil {
					t.Fatal(err)
				}
			}
		}},
		{name: "excluded file added", mutate: func(t *testing.T, root string) {
			writeTree(t, root, map[string]string{"logo.png": "png"})
		}},
	}
	filter := func(rel string, _ bool) bool { return strings.HasSuffix(rel, ".png") }
	s := newStorage(t)
	first := t.TempDir()
	writeTree(t, first, files)
	ref := s.NewArtifactFor("GitRepository", obj("default", "ref"), "r", "ref.tar.gz")
	if err := s.Archive(&ref, first, filter); err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			root := t.TempDir()
			writeTree(t, root, files)
			tt.mutate(t, root)
			for i := range 2 {
				a := s.NewArtifactFor("GitRepository", obj("default", "podinfo"), "r", "a.tar.gz")
				g.Expect(s.Archive(&a, root, filter)).To(Succeed())
				g.Expect(a.Digest).To(Equal(ref.Digest), "build %d", i)
				g.Expect(*a.Size).To(Equal(*ref.Size))
			}
		})
	}
}

// TestArchiveTree: a tree read from a file system is stored as the same
// tree on disk is, and its fingerprints are kept for PathChanged.
func TestArchiveTree(t *testing.T) {
	g := NewWithT(t)
	s := newStorage(t)
	root := t.TempDir()
	writeTree(t, root, map[string]string{"a/x.yaml": "x", "b/y.yaml": "y"})
	fromDisk := s.NewArtifactFor("GitRepository", obj("default", "disk"), "r", "a.tar.gz")
	g.Expect(s.Archive(&fromDisk, root, nil)).To(Succeed())

	tree := fstest.MapFS{"a/x.yaml": {Data: []byte("x"), Mode: 0o644}, "b/y.yaml": {Data: []byte("y"), Mode: 0o644}}
	first := s.NewArtifactFor("GitRepository", obj("default", "tree"), "r1", "1.tar.gz")
	g.Expect(s.ArchiveTree(&first, tree, nil)).To(Succeed())
	g.Expect(first.Digest).To(Equal(fromDisk.Digest))
	g.Expect(s.Verify(first)).To(Succeed())

	tree["b/y.yaml"] = &fstest.MapFile{Data: []byte("changed"), Mode: 0o644}
	second := s.NewArtifactFor("GitRepository", obj("default", "tree"), "r2", "2.tar.gz")
	g.Expect(s.ArchiveTree(&second, tree, nil)).To(Succeed())
	for p, want := range map[string]bool{"a": false, "b": true} {
		changed, known := s.PathChanged(first, second, p)
		g.Expect(known).To(BeTrue(), p)
		g.Expect(changed).To(Equal(want), p)
	}
}

// failingReader yields some bytes, then fails.
type failingReader struct {
	data []byte
	read bool
}

func (r *failingReader) Read(p []byte) (int, error) {
	if !r.read {
		r.read = true
		return copy(p, r.data), nil
	}
	return 0, errors.New("connection reset")
}

func TestCopy(t *testing.T) {
	g := NewWithT(t)
	s := newStorage(t)
	a := s.NewArtifactFor("OCIRepository", obj("apps", "web"), "v1@sha256:x", "layer.tar.gz")
	content := strings.Repeat("layer bytes ", 10_000)
	g.Expect(s.Copy(&a, strings.NewReader(content))).To(Succeed())
	data, err := os.ReadFile(s.LocalPath(a))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(data)).To(Equal(content))
	want, _ := Digest(strings.NewReader(content))
	g.Expect(a.Digest).To(Equal(want))
	g.Expect(*a.Size).To(Equal(int64(len(content))))
	g.Expect(s.Verify(a)).To(Succeed())
}

func TestWriteAtomicity(t *testing.T) {
	badTree := t.TempDir()
	writeTree(t, badTree, map[string]string{"a.yaml": strings.Repeat("a", 100_000), `z\bad`: "x"})
	tests := []struct {
		name  string
		write func(s *Storage, a *meta.Artifact) error
	}{
		{name: "copy from a reader that fails mid-way", write: func(s *Storage, a *meta.Artifact) error {
			return s.Copy(a, &failingReader{data: bytes.Repeat([]byte("x"), 4096)})
		}},
		{name: "archive of a missing directory", write: func(s *Storage, a *meta.Artifact) error {
			return s.Archive(a, filepath.Join(badTree, "missing"), nil)
		}},
		{name: "archive failing after writing some bytes", write: func(s *Storage, a *meta.Artifact) error {
			return s.Archive(a, badTree, nil)
		}},
	}

	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, existing := range []bool{false, true} {
				g := NewWithT(t)
				s := newStorage(t)
				a := s.NewArtifactFor("GitRepository", obj("default", "podinfo"), "r", "a.tar.gz")
				var prev meta.Artifact
				if existing {
					prev = storedArtifact(t, s, "a.tar.gz")
				}
				failed := a
				err := tt.write(s, &failed)
				g.Expect(err).To(HaveOccurred())
				g.Expect(failed.Digest).To(BeEmpty(), "a failed write sets no digest")
				g.Expect(failed.Size).To(BeNil())
				dir := filepath.Dir(s.LocalPath(a))
				if !existing {
					g.Expect(listDir(t, dir)).To(BeEmpty(), "no partial file under any name")
					continue
				}
				g.Expect(listDir(t, dir)).To(Equal([]string{"a.tar.gz"}))
				g.Expect(s.Verify(prev)).To(Succeed(), "the previous artifact is intact")
			}
		})
	}
}

func TestWriteNeverExposesPartialFile(t *testing.T) {
	g := NewWithT(t)
	s := newStorage(t)
	a := s.NewArtifactFor("Bucket", obj("default", "b"), "r", "b.tar.gz")
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- s.Copy(&a, pr) }()

	_, err := pw.Write(bytes.Repeat([]byte("y"), 1<<16))
	g.Expect(err).NotTo(HaveOccurred())
	// The write is in progress: only a temporary file exists.
	g.Expect(s.ArtifactExists(a)).To(BeFalse())
	dir := filepath.Dir(s.LocalPath(a))
	names := listDir(t, dir)
	g.Expect(names).To(HaveLen(1))
	g.Expect(names[0]).To(HavePrefix(tempPrefix))
	_, err = s.GarbageCollect(t.Context(), a)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(listDir(t, dir)).To(Equal(names), "garbage collection spares a write in progress")

	g.Expect(pw.Close()).To(Succeed())
	g.Expect(<-done).To(Succeed())
	g.Expect(listDir(t, dir)).To(Equal([]string{"b.tar.gz"}))
	g.Expect(*a.Size).To(Equal(int64(1 << 16)))
}

func TestArchiveInvalidPath(t *testing.T) {
	g := NewWithT(t)
	s := newStorage(t)
	a := meta.Artifact{Path: "gitrepository/default/../../../escape/a.tar.gz"}
	g.Expect(s.Archive(&a, sourceTree(t), nil)).To(MatchError(ErrInvalidPath))
	g.Expect(s.Copy(&a, strings.NewReader("x"))).To(MatchError(ErrInvalidPath))
	g.Expect(filepath.Join(filepath.Dir(s.BasePath()), "escape")).NotTo(BeAnExistingFile())
}

func TestArchiveRoundTrip(t *testing.T) {
	g := NewWithT(t)
	s := newStorage(t)
	a := storedArtifact(t, s, "a.tar.gz")
	f, err := s.Open(a)
	g.Expect(err).NotTo(HaveOccurred())
	defer f.Close()
	out := t.TempDir()
	g.Expect(archive.Extract(f, out)).To(Succeed())
	g.Expect(filepath.Join(out, "apps/base/service.yaml")).To(BeARegularFile())
}
