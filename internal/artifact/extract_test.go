package artifact

import (
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/windlass-dev/windlass/api/meta"
	"github.com/windlass-dev/windlass/internal/archive"
)

// treeFiles lists the regular files under root, slash-separated, with their
// content.
func treeFiles(t *testing.T, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		b, err := os.ReadFile(p)
		out[filepath.ToSlash(rel)] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestExtractTo(t *testing.T) {
	all := map[string]string{
		"kustomization.yaml":     "resources: [apps]\n",
		"apps/deploy.yaml":       "kind: Deployment\n",
		"apps/base/service.yaml": "kind: Service\n",
		"infra/ns.yaml":          "kind: Namespace\n",
	}
	apps := map[string]string{"deploy.yaml": "kind: Deployment\n", "base/service.yaml": "kind: Service\n"}
	tests := []struct {
		name    string
		subPath string
		want    map[string]string
		wantErr string
	}{
		{name: "whole artifact", subPath: "", want: all},
		{name: "dot is the whole artifact", subPath: ".", want: all},
		{name: "sub-directory", subPath: "apps", want: apps},
		{name: "sub-directory with dot prefix and trailing slash", subPath: "./apps/", want: apps},
		{name: "nested sub-directory", subPath: "apps/base", want: map[string]string{"service.yaml": "kind: Service\n"}},
		{name: "parent traversal", subPath: "../", wantErr: "'..'"},
		{name: "traversal through a directory", subPath: "apps/../../etc", wantErr: "'..'"},
		{name: "absolute", subPath: "/etc", wantErr: "absolute"},
		{name: "backslash", subPath: `apps\..\..`, wantErr: "backslash"},
		{name: "missing", subPath: "nope", wantErr: "not found"},
		{name: "file, not directory", subPath: "kustomization.yaml", wantErr: "not a directory"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			s := newStorage(t)
			a := storedArtifact(t, s, "a.tar.gz")
			parent := t.TempDir()
			dest := filepath.Join(parent, "include")
			err := s.ExtractTo(a, tt.subPath, dest)
			if tt.wantErr != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tt.wantErr)))
				g.Expect(listDir(t, parent)).To(Or(BeEmpty(), Equal([]string{"include"})))
				if _, statErr := os.Stat(dest); statErr == nil {
					g.Expect(treeFiles(t, dest)).To(BeEmpty())
				}
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(treeFiles(t, dest)).To(Equal(tt.want))
			g.Expect(listDir(t, parent)).To(Equal([]string{"include"}))
		})
	}
}

func TestExtractToVerifiesDigest(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(t *testing.T, s *Storage, a *meta.Artifact)
		want   error
	}{
		{name: "tampered", want: ErrDigestMismatch, mutate: func(t *testing.T, s *Storage, a *meta.Artifact) {
			other := s.NewArtifactFor("GitRepository", obj("default", "evil"), "r", "e.tar.gz")
			if err := s.Archive(&other, t.TempDir(), nil); err != nil {
				t.Fatal(err)
			}
			data, err := os.ReadFile(s.LocalPath(other))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(s.LocalPath(*a), data, 0o640); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "missing", want: ErrNotFound, mutate: func(t *testing.T, s *Storage, a *meta.Artifact) {
			if err := os.Remove(s.LocalPath(*a)); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "no digest", want: ErrInvalidDigest, mutate: func(_ *testing.T, _ *Storage, a *meta.Artifact) { a.Digest = "" }},
		{name: "invalid path", want: ErrInvalidPath, mutate: func(_ *testing.T, _ *Storage, a *meta.Artifact) { a.Path = "a/../../b/c" }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			s := newStorage(t)
			a := storedArtifact(t, s, "a.tar.gz")
			tt.mutate(t, s, &a)
			dest := filepath.Join(t.TempDir(), "out")
			g.Expect(s.ExtractTo(a, "", dest)).To(MatchError(tt.want))
			g.Expect(dest).NotTo(BeADirectory(), "nothing is extracted from an unverified artifact")
		})
	}
}

func TestExtractToOptions(t *testing.T) {
	g := NewWithT(t)
	s := newStorage(t)
	a := storedArtifact(t, s, "a.tar.gz")
	err := s.ExtractTo(a, "apps", filepath.Join(t.TempDir(), "out"), archive.WithMaxSize(1024))
	g.Expect(err).To(MatchError(archive.ErrTooLarge))
}

// TestPatchToVerifiesDigest: the tree of an earlier artifact is patched
// into a newer one's only from a file that matches the newer one's digest;
// a tampered or missing file leaves the tree as it was.
func TestPatchToVerifiesDigest(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(t *testing.T, s *Storage, a meta.Artifact)
		want   error
	}{
		{name: "tampered", want: ErrDigestMismatch, mutate: func(t *testing.T, s *Storage, a meta.Artifact) {
			if err := os.WriteFile(s.LocalPath(a), []byte("not the archive"), 0o640); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "missing", want: ErrNotFound, mutate: func(t *testing.T, s *Storage, a meta.Artifact) {
			if err := os.Remove(s.LocalPath(a)); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			s := newStorage(t)
			src := t.TempDir()
			archived := func(fileName, content string) meta.Artifact {
				writeTree(t, src, map[string]string{"apps/a/app.yaml": content})
				a := s.NewArtifactFor("GitRepository", obj("default", "monorepo"), fileName, fileName)
				g.Expect(s.Archive(&a, src, nil)).To(Succeed())
				return a
			}
			earlier, newer := archived("one.tar.gz", "a: 1\n"), archived("two.tar.gz", "a: 2\n")
			tree := t.TempDir()
			g.Expect(s.ExtractTo(earlier, "", tree)).To(Succeed())

			patched, err := s.PatchTo(earlier, newer, tree)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(patched).To(BeTrue())
			g.Expect(os.ReadFile(filepath.Join(tree, "apps/a/app.yaml"))).To(Equal([]byte("a: 2\n")))

			later := archived("three.tar.gz", "a: 3\n")
			tt.mutate(t, s, later)
			patched, err = s.PatchTo(newer, later, tree)
			g.Expect(err).To(MatchError(tt.want))
			g.Expect(patched).To(BeFalse())
			g.Expect(os.ReadFile(filepath.Join(tree, "apps/a/app.yaml"))).To(Equal([]byte("a: 2\n")), "nothing is patched from an unverified artifact")
		})
	}
}
