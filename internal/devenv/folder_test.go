package devenv

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/windlass-dev/windlass/internal/gitserver"
)

// TestFolderMirror: each sync commits what changed in the folder (new,
// changed and removed files) and nothing when nothing changed; .git folders
// and non-regular files are left out.
func TestFolderMirror(t *testing.T) {
	g := NewWithT(t)
	srv := gitserver.NewForTest(t)
	repo := srv.MustInitRepo(t, "dev.git", branch)
	dir := t.TempDir()
	write := func(name, content string) {
		g.Expect(os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755)).To(Succeed())
		g.Expect(os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644)).To(Succeed())
	}
	tree := func() string {
		out, err := srv.GitCommand(repo.Path(), "ls-tree", "-r", "--name-only", branch).Output()
		g.Expect(err).NotTo(HaveOccurred())
		return strings.TrimSpace(string(out))
	}
	show := func(path string) string {
		out, err := srv.GitCommand(repo.Path(), "show", branch+":"+path).Output()
		g.Expect(err).NotTo(HaveOccurred())
		return string(out)
	}
	write("a.yaml", "a: 1\n")
	write("apps/b.yaml", "b: 1\n")
	write(".git/config", "not served\n")
	g.Expect(os.Symlink("a.yaml", filepath.Join(dir, "link.yaml"))).To(Succeed())
	m := newFolderMirror(dir, repo)

	first, err := m.sync()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(first).To(HaveLen(40))
	g.Expect(tree()).To(Equal("a.yaml\napps/b.yaml"))

	again, err := m.sync()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(again).To(BeEmpty(), "nothing changed")

	write("a.yaml", "a: 2\n")
	g.Expect(os.Remove(filepath.Join(dir, "apps/b.yaml"))).To(Succeed())
	write("c.yaml", "c: 1\n")
	changed, err := m.sync()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(changed).NotTo(BeEmpty())
	g.Expect(changed).NotTo(Equal(first))
	head, err := repo.Head(branch)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(head).To(Equal(changed))
	g.Expect(tree()).To(Equal("a.yaml\nc.yaml"))
	g.Expect(show("a.yaml")).To(Equal("a: 2\n"))
}

// TestFolderMirrorRefuses: an empty folder and one past the limits are
// errors that say what to do.
func TestFolderMirrorRefuses(t *testing.T) {
	tests := []struct {
		name  string
		files map[string]int
		want  string
	}{
		{name: "empty folder", files: nil, want: "has no files: put Kubernetes manifests"},
		{name: "a file too large", files: map[string]int{"big.yaml": maxFileBytes + 1}, want: "big.yaml is larger than 8 MiB"},
		{name: "too much in all", files: map[string]int{"1.yaml": maxFileBytes, "2.yaml": maxFileBytes, "3.yaml": maxFileBytes,
			"4.yaml": maxFileBytes, "5.yaml": maxFileBytes, "6.yaml": maxFileBytes, "7.yaml": maxFileBytes, "8.yaml": maxFileBytes, "9.yaml": 1},
			want: "holds more than 64 MiB of files"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			dir := t.TempDir()
			for name, size := range tt.files {
				g.Expect(os.WriteFile(filepath.Join(dir, name), make([]byte, size), 0o644)).To(Succeed())
			}
			_, err := newFolderMirror(dir, nil).sync()
			g.Expect(err).To(MatchError(ContainSubstring(tt.want)))
		})
	}
}
