package archive

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"testing"

	. "github.com/onsi/gomega"
)

// tarEntry describes one entry of a hand-crafted archive.
type tarEntry struct {
	hdr     tar.Header
	content string
}

// file returns a regular file entry.
func file(name, content string, mode int64) tarEntry {
	return tarEntry{hdr: tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: mode, Size: int64(len(content))}, content: content}
}

// dir returns a directory entry.
func dir(name string, mode int64) tarEntry {
	return tarEntry{hdr: tar.Header{Typeflag: tar.TypeDir, Name: name, Mode: mode}}
}

// special returns an entry of the given type with no content.
func special(typ byte, name, linkname string) tarEntry {
	return tarEntry{hdr: tar.Header{Typeflag: typ, Name: name, Linkname: linkname, Mode: 0o644}}
}

// makeTarGz crafts a gzip-compressed tarball from entries, exactly as given.
func makeTarGz(t testing.TB, entries ...tarEntry) []byte {
	t.Helper()
	var buf bytes.Buffer
	gw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gw)
	for _, e := range entries {
		hdr := e.hdr
		if err := tw.WriteHeader(&hdr); err != nil {
			t.Fatalf("writing header %q: %v", hdr.Name, err)
		}
		if _, err := io.WriteString(tw, e.content); err != nil {
			t.Fatalf("writing content %q: %v", hdr.Name, err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := gw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// listedEntry is what tests compare of an archive's entries.
type listedEntry struct {
	Name    string
	Type    byte
	Mode    int64
	Content string
}

// listTarGz reads back a gzip-compressed tarball, checking the invariants
// every Build output must satisfy.
func listTarGz(t testing.TB, data []byte) []listedEntry {
	t.Helper()
	g := NewWithT(t)
	gr, err := gzip.NewReader(bytes.NewReader(data))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(gr.Name).To(BeEmpty())
	g.Expect(gr.ModTime.IsZero()).To(BeTrue())
	tr := tar.NewReader(gr)
	var out []listedEntry
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			return out
		}
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(hdr.ModTime.Equal(modTime)).To(BeTrue(), "mtime of %s", hdr.Name)
		g.Expect(hdr.Uid).To(BeZero())
		g.Expect(hdr.Gid).To(BeZero())
		g.Expect(hdr.Uname).To(BeEmpty())
		g.Expect(hdr.Gname).To(BeEmpty())
		g.Expect(hdr.AccessTime.IsZero()).To(BeTrue())
		g.Expect(hdr.Devmajor).To(BeZero())
		content, err := io.ReadAll(tr)
		g.Expect(err).NotTo(HaveOccurred())
		out = append(out, listedEntry{Name: hdr.Name, Type: hdr.Typeflag, Mode: hdr.Mode, Content: string(content)})
	}
}

// buildBytes runs Build and returns its output.
func buildBytes(t testing.TB, root string, filter Filter) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := Build(&buf, root, filter); err != nil {
		t.Fatalf("Build: %v", err)
	}
	return buf.Bytes()
}

// writeTree creates files under root: keys are slash-separated paths, a key
// ending in "/" is a directory.
func writeTree(t testing.TB, root string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(root, filepath.FromSlash(name))
		if name[len(name)-1] == '/' {
			if err := os.MkdirAll(p, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// readTree returns the regular files ("name": content) and directories
// ("name/": "") under root, and fails on anything else.
func readTree(t testing.TB, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		switch {
		case rel == ".":
		case d.IsDir():
			out[rel+"/"] = ""
		case d.Type().IsRegular():
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			out[rel] = string(b)
		default:
			t.Errorf("unexpected %s of type %s", rel, d.Type())
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// onlyChild asserts that parent holds nothing but the entry named child.
func onlyChild(t testing.TB, parent, child string) {
	t.Helper()
	entries, err := os.ReadDir(parent)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	sort.Strings(names)
	NewWithT(t).Expect(names).To(Equal([]string{child}), "something was written outside the extraction directory")
}
