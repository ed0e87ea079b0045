package archive

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

// extractInto extracts data into a fresh "out" directory under a fresh parent
// and returns both.
func extractInto(t *testing.T, data []byte, opts ...ExtractOption) (parent, out string, err error) {
	t.Helper()
	parent = t.TempDir()
	out = filepath.Join(parent, "out")
	err = Extract(bytes.NewReader(data), out, opts...)
	return parent, out, err
}

func TestExtractRejects(t *testing.T) {
	tests := []struct {
		name    string
		entries []tarEntry
		want    string
	}{
		{name: "parent traversal", entries: []tarEntry{file("../evil", "x", 0o644)}, want: "'..'"},
		{name: "nested traversal", entries: []tarEntry{file("a/../../evil", "x", 0o644)}, want: "'..'"},
		{name: "traversal that cleans inside", entries: []tarEntry{file("a/../b", "x", 0o644)}, want: "'..'"},
		{name: "dot-dot directory", entries: []tarEntry{dir("../", 0o755)}, want: "'..'"},
		{name: "absolute", entries: []tarEntry{file("/tmp/evil", "x", 0o644)}, want: "absolute"},
		{name: "backslash", entries: []tarEntry{file(`..\evil`, "x", 0o644)}, want: "backslash"},
		{name: "empty name", entries: []tarEntry{file("", "x", 0o644)}, want: "empty name"},
		{name: "file named dot", entries: []tarEntry{file(".", "x", 0o644)}, want: "root"},
		{name: "symlink", entries: []tarEntry{special(tar.TypeSymlink, "link", "/etc/passwd")}, want: "link"},
		{name: "relative symlink", entries: []tarEntry{special(tar.TypeSymlink, "link", "a.yaml")}, want: "link"},
		{name: "hardlink", entries: []tarEntry{file("a", "x", 0o644), special(tar.TypeLink, "b", "a")}, want: "link"},
		{name: "char device", entries: []tarEntry{special(tar.TypeChar, "null", "")}, want: "unsupported type"},
		{name: "block device", entries: []tarEntry{special(tar.TypeBlock, "sda", "")}, want: "unsupported type"},
		{name: "fifo", entries: []tarEntry{special(tar.TypeFifo, "fifo", "")}, want: "unsupported type"},
		{name: "contiguous file", entries: []tarEntry{special(tar.TypeCont, "cont", "")}, want: "unsupported type"},
		{name: "valid entries before a bad one", entries: []tarEntry{file("ok.yaml", "ok", 0o644), file("../evil", "x", 0o644)}, want: "'..'"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			parent, _, err := extractInto(t, makeTarGz(t, tt.entries...))
			g.Expect(err).To(HaveOccurred())
			g.Expect(errors.Is(err, ErrUnsafeEntry)).To(BeTrue(), "error %v", err)
			g.Expect(err.Error()).To(ContainSubstring(tt.want))
			onlyChild(t, parent, "out")
		})
	}
}

func TestExtractSkipSymlinks(t *testing.T) {
	g := NewWithT(t)
	data := makeTarGz(t,
		file("a.yaml", "a", 0o644),
		special(tar.TypeSymlink, "link", "/etc/passwd"),
		special(tar.TypeLink, "hard", "a.yaml"),
		file("b.yaml", "b", 0o644),
	)
	parent, out, err := extractInto(t, data, WithSkipSymlinks())
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(readTree(t, out)).To(Equal(map[string]string{"a.yaml": "a", "b.yaml": "b"}))
	onlyChild(t, parent, "out")

	_, _, err = extractInto(t, makeTarGz(t, special(tar.TypeFifo, "f", "")), WithSkipSymlinks())
	g.Expect(err).To(MatchError(ErrUnsafeEntry), "skipping links does not admit other types")
}

func TestExtractModes(t *testing.T) {
	tests := []struct {
		name  string
		entry tarEntry
		want  os.FileMode
	}{
		{name: "dir 000 gets owner rwx", entry: dir("d0/", 0o000), want: os.ModeDir | 0o700},
		{name: "dir 777 is not world-writable", entry: dir("d7/", 0o777), want: os.ModeDir | 0o755},
		{name: "dir with sticky and setgid", entry: dir("ds/", 0o3755), want: os.ModeDir | 0o755},
		{name: "file 000 gets owner rw", entry: file("f0", "x", 0o000), want: 0o600},
		{name: "file 644", entry: file("f644", "x", 0o644), want: 0o644},
		{name: "file 777 is not world-writable", entry: file("f777", "x", 0o777), want: 0o755},
		{name: "setuid dropped", entry: file("suid", "x", 0o4755), want: 0o755},
		{name: "setgid dropped", entry: file("sgid", "x", 0o2711), want: 0o711},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			_, out, err := extractInto(t, makeTarGz(t, tt.entry))
			g.Expect(err).NotTo(HaveOccurred())
			fi, err := os.Lstat(filepath.Join(out, strings.TrimSuffix(tt.entry.hdr.Name, "/")))
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(fi.Mode()).To(Equal(tt.want))
		})
	}
}

func TestExtractWritableAfterRestrictiveDir(t *testing.T) {
	g := NewWithT(t)
	data := makeTarGz(t, dir("locked/", 0o000), file("locked/inner.yaml", "x", 0o400))
	_, out, err := extractInto(t, data)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(readTree(t, out)).To(Equal(map[string]string{"locked/": "", "locked/inner.yaml": "x"}))
	g.Expect(os.RemoveAll(out)).To(Succeed(), "extracted trees can always be cleaned up")
}

func TestExtractNames(t *testing.T) {
	g := NewWithT(t)
	data := makeTarGz(t,
		tarEntry{hdr: tar.Header{Typeflag: tar.TypeXGlobalHeader, Name: "pax_global_header", PAXRecords: map[string]string{"comment": "abc"}}},
		dir("./", 0o755),
		file("./a.yaml", "a", 0o644),
		file("implicit/parent/b.yaml", "b", 0o644),
		file("dup", "first", 0o644),
		file("dup", "second", 0o644),
		file("dots/.hidden", "h", 0o644),
		file("x/./y", "y", 0o644),
	)
	_, out, err := extractInto(t, data)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(readTree(t, out)).To(Equal(map[string]string{
		"a.yaml":                 "a",
		"implicit/":              "",
		"implicit/parent/":       "",
		"implicit/parent/b.yaml": "b",
		"dup":                    "second",
		"dots/":                  "",
		"dots/.hidden":           "h",
		"x/":                     "",
		"x/y":                    "y",
	}))
}

func TestExtractFutureMtime(t *testing.T) {
	g := NewWithT(t)
	e := file("future.yaml", "x", 0o644)
	e.hdr.ModTime = time.Now().Add(100 * 365 * 24 * time.Hour)
	d := dir("futuredir/", 0o755)
	d.hdr.ModTime = e.hdr.ModTime
	_, out, err := extractInto(t, makeTarGz(t, d, e))
	g.Expect(err).NotTo(HaveOccurred())
	for _, name := range []string{"future.yaml", "futuredir"} {
		fi, err := os.Stat(filepath.Join(out, name))
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(fi.ModTime()).To(BeTemporally("<=", time.Now()))
	}
}

// zeroFileTarGz streams a tarball holding one file of size zero bytes.
func zeroFileTarGz(t *testing.T, size int64) []byte {
	t.Helper()
	var buf bytes.Buffer
	gw, err := gzip.NewWriterLevel(&buf, gzip.BestSpeed)
	if err != nil {
		t.Fatal(err)
	}
	tw := tar.NewWriter(gw)
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: "bomb", Mode: 0o644, Size: size}); err != nil {
		t.Fatal(err)
	}
	if _, err := io.CopyN(tw, zeroReader{}, size); err != nil {
		t.Fatal(err)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := gw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

type zeroReader struct{}

func (zeroReader) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

func TestExtractSizeLimit(t *testing.T) {
	manyEntries := make([]tarEntry, 0, 300)
	for i := range 300 {
		manyEntries = append(manyEntries, dir("d"+strings.Repeat("x", i%50)+string(rune('a'+i%26))+"/"+string(rune('a'+i/26))+"/", 0o755))
	}
	tests := []struct {
		name    string
		data    func(t *testing.T) []byte
		opts    []ExtractOption
		wantErr bool
	}{
		{name: "under the cap", data: func(t *testing.T) []byte { return zeroFileTarGz(t, 1<<20) }, opts: []ExtractOption{WithMaxSize(2 << 20)}},
		{name: "one file over the cap", data: func(t *testing.T) []byte { return zeroFileTarGz(t, 3<<20) }, opts: []ExtractOption{WithMaxSize(2 << 20)}, wantErr: true},
		{name: "several files over the cap", data: func(t *testing.T) []byte {
			c := strings.Repeat("y", 600<<10)
			return makeTarGz(t, file("a", c, 0o644), file("b", c, 0o644), file("c", c, 0o644), file("d", c, 0o644))
		}, opts: []ExtractOption{WithMaxSize(2 << 20)}, wantErr: true},
		{name: "many headers over the cap", data: func(t *testing.T) []byte { return makeTarGz(t, manyEntries...) }, opts: []ExtractOption{WithMaxSize(64 << 10)}, wantErr: true},
		{name: "zero means default", data: func(t *testing.T) []byte { return zeroFileTarGz(t, 1<<20) }, opts: []ExtractOption{WithMaxSize(0)}},
		{name: "default cap refuses a bomb", data: func(t *testing.T) []byte { return zeroFileTarGz(t, DefaultMaxSize+1) }, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			parent, out, err := extractInto(t, tt.data(t), tt.opts...)
			onlyChild(t, parent, "out")
			if !tt.wantErr {
				g.Expect(err).NotTo(HaveOccurred())
				return
			}
			g.Expect(err).To(MatchError(ErrTooLarge))
			if fi, err := os.Stat(filepath.Join(out, "bomb")); err == nil {
				g.Expect(fi.Size()).To(BeNumerically("<=", 2<<20), "a rejected entry must not be written beyond the cap")
			}
		})
	}
}

func TestExtractCorruptInput(t *testing.T) {
	valid := makeTarGz(t, file("a.yaml", strings.Repeat("a", 10_000), 0o644))
	tests := []struct {
		name string
		data []byte
	}{
		{name: "not gzip", data: []byte("plain text, not an archive")},
		{name: "empty", data: nil},
		{name: "truncated", data: valid[:len(valid)/2]},
		{name: "bad checksum", data: append(append([]byte{}, valid[:len(valid)-8]...), 1, 2, 3, 4, 5, 6, 7, 8)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			parent, _, err := extractInto(t, tt.data)
			g.Expect(err).To(HaveOccurred())
			onlyChild(t, parent, "out")
		})
	}
}

func TestExtractDoesNotFollowExistingSymlinks(t *testing.T) {
	g := NewWithT(t)
	parent := t.TempDir()
	outside := filepath.Join(parent, "outside")
	out := filepath.Join(parent, "out")
	g.Expect(os.MkdirAll(outside, 0o755)).To(Succeed())
	g.Expect(os.MkdirAll(out, 0o755)).To(Succeed())
	g.Expect(os.Symlink(outside, filepath.Join(out, "lnk"))).To(Succeed())
	g.Expect(os.Symlink(filepath.Join(outside, "target"), filepath.Join(out, "file-lnk"))).To(Succeed())

	data := makeTarGz(t, file("lnk/x", "x", 0o644), file("file-lnk", "y", 0o644))
	err := Extract(bytes.NewReader(data), out)
	g.Expect(err).NotTo(HaveOccurred())
	entries, err := os.ReadDir(outside)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(entries).To(BeEmpty(), "nothing may be written through a symlink that points outside")
}
