package build

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	. "github.com/onsi/gomega"
)

func TestConfinedFSResolve(t *testing.T) {
	tests := []struct {
		name    string
		path    string
		want    string // relative to root
		wantErr string
	}{
		{name: "root", path: ".", want: "."},
		{name: "plain file", path: "dir/file.yaml", want: "dir/file.yaml"},
		{name: "absolute inside root", path: "@root/dir/file.yaml", want: "dir/file.yaml"},
		{name: "missing file resolves lexically", path: "dir/missing/x.yaml", want: "dir/missing/x.yaml"},
		{name: "relative file link", path: "dir/rel.yaml", want: "dir/file.yaml"},
		{name: "relative dir link", path: "dirlink/file.yaml", want: "dir/file.yaml"},
		{name: "dot-dot after a dir link follows the target", path: "dirlink/../top.yaml", want: "top.yaml"},
		{name: "missing file below a dir link", path: "dirlink/new.yaml", want: "dir/new.yaml"},
		{name: "dot-dot out of root", path: "../x", wantErr: `"../x": path is outside the root directory`},
		{name: "absolute outside root", path: "/etc/passwd", wantErr: `"/etc/passwd": path is outside the root directory`},
		{name: "absolute link out", path: "dir/passwd", wantErr: `symlink "dir/passwd" points to "/etc/passwd"`},
		{name: "relative link out", path: "dir/up", wantErr: `symlink "dir/up" leads out of root`},
		{name: "path through a link out", path: "dir/up/x/y", wantErr: `symlink "dir/up" leads out of root`},
		{name: "dangling link out", path: "dir/dangling", wantErr: `symlink "dir/dangling" points to "/nonexistent/x"`},
		{name: "link loop", path: "dir/loop1", wantErr: "too many levels of symbolic links"},
	}
	parent, root := newRoot(t)
	writeTree(t, parent, map[string]string{"secret": "s"})
	writeTree(t, root, map[string]string{
		"top.yaml":      "x",
		"dir/file.yaml": "x",
		"dir/rel.yaml":  "link:file.yaml",
		"dirlink":       "link:dir",
		"dir/passwd":    "link:/etc/passwd",
		"dir/up":        "link:../..",
		"dir/dangling":  "link:/nonexistent/x",
		"dir/loop1":     "link:loop2",
		"dir/loop2":     "link:loop1",
	})
	fsys, err := NewConfinedFS(root)
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			p := tt.path
			if rest, ok := cutRoot(p); ok {
				p = filepath.Join(fsys.Root(), rest)
			}
			got, err := fsys.Resolve(p)
			if tt.wantErr != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tt.wantErr)))
				g.Expect(errors.Is(err, ErrOutsideRoot) || tt.name == "link loop").To(BeTrue())
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got).To(Equal(filepath.Join(fsys.Root(), tt.want)))
		})
	}
}

func cutRoot(p string) (string, bool) {
	const marker = "@root/"
	if len(p) >= len(marker) && p[:len(marker)] == marker {
		return p[len(marker):], true
	}
	return "", false
}

func TestConfinedFSOperations(t *testing.T) {
	g := NewWithT(t)
	_, root := newRoot(t)
	writeTree(t, root, map[string]string{
		"a.yaml":        "a",
		"b.yml":         "b",
		".hidden.yaml":  "h",
		"dir/c.yaml":    "c",
		"dir/link.yaml": "link:../a.yaml",
		"out.yaml":      "link:/etc/hostname",
	})
	fsys, err := NewConfinedFS(root)
	g.Expect(err).NotTo(HaveOccurred())

	data, err := fsys.ReadFile("dir/link.yaml")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(data)).To(Equal("a"))
	_, err = fsys.ReadFile("out.yaml")
	g.Expect(errors.Is(err, ErrOutsideRoot)).To(BeTrue())
	_, err = fsys.Open("out.yaml")
	g.Expect(errors.Is(err, ErrOutsideRoot)).To(BeTrue())
	f, err := fsys.Open("a.yaml")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(f.Close()).To(Succeed())

	g.Expect(fsys.Exists("a.yaml")).To(BeTrue())
	g.Expect(fsys.Exists("out.yaml")).To(BeFalse())
	g.Expect(fsys.IsDir("dir")).To(BeTrue())
	g.Expect(fsys.IsDir("a.yaml")).To(BeFalse())

	names, err := fsys.ReadDir("dir")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(names).To(ConsistOf("c.yaml", "link.yaml"))
	_, err = fsys.ReadDir("/etc")
	g.Expect(errors.Is(err, ErrOutsideRoot)).To(BeTrue())

	matches, err := fsys.Glob(filepath.Join(fsys.Root(), "*.y*ml"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(matches).To(Equal([]string{filepath.Join(fsys.Root(), "a.yaml"), filepath.Join(fsys.Root(), "b.yml"), filepath.Join(fsys.Root(), "out.yaml")}))
	matches, err = fsys.Glob("dir/c.*")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(matches).To(Equal([]string{filepath.Join(fsys.Root(), "dir", "c.yaml")}))
	_, err = fsys.Glob("d*/c.yaml")
	g.Expect(err).To(MatchError(ContainSubstring("wildcards are only supported in the last path element")))

	d, f2, err := fsys.CleanedAbs("dir/link.yaml")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(d.String()).To(Equal(filepath.Join(fsys.Root(), "dir")))
	g.Expect(f2).To(Equal("link.yaml"))
	_, _, err = fsys.CleanedAbs("missing.yaml")
	g.Expect(err).To(HaveOccurred())

	var walked []string
	g.Expect(fsys.Walk("dir", func(p string, _ os.FileInfo, err error) error {
		walked = append(walked, filepath.Base(p))
		return err
	})).To(Succeed())
	g.Expect(walked).To(Equal([]string{"dir", "c.yaml", "link.yaml"}))
}

func TestConfinedFSIsReadOnly(t *testing.T) {
	g := NewWithT(t)
	_, root := newRoot(t)
	fsys, err := NewConfinedFS(root)
	g.Expect(err).NotTo(HaveOccurred())
	_, err = fsys.Create("x")
	g.Expect(err).To(MatchError(ContainSubstring("read-only")))
	g.Expect(fsys.Mkdir("x")).To(MatchError(ContainSubstring("read-only")))
	g.Expect(fsys.MkdirAll("x/y")).To(MatchError(ContainSubstring("read-only")))
	g.Expect(fsys.WriteFile("x", nil)).To(MatchError(ContainSubstring("read-only")))
	g.Expect(fsys.RemoveAll(".")).To(MatchError(ContainSubstring("read-only")))
	entries, err := os.ReadDir(root)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(entries).To(BeEmpty())
}

func TestConfinedFSRefusesSpecialFiles(t *testing.T) {
	g := NewWithT(t)
	_, root := newRoot(t)
	g.Expect(syscall.Mkfifo(filepath.Join(root, "fifo.yaml"), 0o644)).To(Succeed())
	fsys, err := NewConfinedFS(root)
	g.Expect(err).NotTo(HaveOccurred())
	_, err = fsys.ReadFile("fifo.yaml")
	g.Expect(err).To(MatchError(ContainSubstring(`"fifo.yaml" is not a regular file`)))
}

func TestNewConfinedFS(t *testing.T) {
	g := NewWithT(t)
	parent, root := newRoot(t)
	writeTree(t, parent, map[string]string{"file": "x", "alias": "link:artifact"})
	_, err := NewConfinedFS(filepath.Join(parent, "file"))
	g.Expect(err).To(MatchError(ContainSubstring("is not a directory")))
	_, err = NewConfinedFS(filepath.Join(parent, "missing"))
	g.Expect(err).To(HaveOccurred())
	// A root reached through a link is resolved once and trusted.
	fsys, err := NewConfinedFS(filepath.Join(parent, "alias"))
	g.Expect(err).NotTo(HaveOccurred())
	real, _ := filepath.EvalSymlinks(root)
	g.Expect(fsys.Root()).To(Equal(real))
}
