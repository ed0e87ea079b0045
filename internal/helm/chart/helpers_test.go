package chart

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// bom is a UTF-8 byte order mark, for tests that prepend one.
const bom = "\xEF\xBB\xBF"

// writeTree writes files (path → content, relative to dir), creating folders.
func writeTree(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// symlink makes link (relative to dir) point at target, creating folders.
func symlink(t *testing.T, dir, link, target string) {
	t.Helper()
	p := filepath.Join(dir, filepath.FromSlash(link))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, p); err != nil {
		t.Fatal(err)
	}
}

// chartYAML returns a Chart.yaml; deps are "name|version|repository".
func chartYAML(name, version string, deps ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "apiVersion: v2\nname: %s\nversion: %s\n", name, version)
	if len(deps) > 0 {
		b.WriteString("dependencies:\n")
	}
	for _, d := range deps {
		p := strings.SplitN(d, "|", 3)
		fmt.Fprintf(&b, "- name: %s\n  version: %q\n  repository: %q\n", p[0], p[1], p[2])
	}
	return b.String()
}

// chartFiles returns the files of a small chart folder under prefix.
func chartFiles(prefix, name, version string, deps ...string) map[string]string {
	return map[string]string{
		prefix + "/Chart.yaml":          chartYAML(name, version, deps...),
		prefix + "/values.yaml":         "replicas: 1\n",
		prefix + "/templates/cm.yaml":   "kind: ConfigMap\n",
		prefix + "/templates/NOTES.txt": "notes\n",
	}
}

// tarEntry is one entry of a hand-made archive.
type tarEntry struct {
	name     string
	body     string
	typeflag byte // tar.TypeReg when zero
	linkname string
}

// tarGz builds a gzip-compressed tarball from entries, as a hostile packager
// could.
func tarGz(t testing.TB, entries ...tarEntry) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for _, e := range entries {
		hd := &tar.Header{Name: e.name, Mode: 0o644, Typeflag: e.typeflag, Linkname: e.linkname}
		if hd.Typeflag == 0 {
			hd.Typeflag = tar.TypeReg
		}
		if hd.Typeflag == tar.TypeReg {
			hd.Size = int64(len(e.body))
		}
		if err := tw.WriteHeader(hd); err != nil {
			t.Fatal(err)
		}
		if hd.Size > 0 {
			if _, err := tw.Write([]byte(e.body)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// chartEntries returns the entries of a small valid chart package.
func chartEntries(name, version string) []tarEntry {
	return []tarEntry{
		{name: name + "/Chart.yaml", body: chartYAML(name, version)},
		{name: name + "/values.yaml", body: "replicas: 1\n"},
		{name: name + "/templates/cm.yaml", body: "kind: ConfigMap\n"},
	}
}

// withEntries appends extra entries to a list.
func withEntries(base []tarEntry, extra ...tarEntry) []tarEntry {
	return append(append([]tarEntry{}, base...), extra...)
}
