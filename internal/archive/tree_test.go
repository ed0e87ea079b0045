package archive

import (
	"bytes"
	"io/fs"
	"testing"
	"testing/fstest"

	. "github.com/onsi/gomega"
)

// TestBuildTree: a tree read from a file system gives the bytes and the
// fingerprints of the same tree on disk; a link it cannot resolve is an
// error, not a file left out.
func TestBuildTree(t *testing.T) {
	files := map[string]string{
		"kustomization.yaml": "resources: [a.yaml]\n",
		"a.yaml":             "kind: ConfigMap\n",
		"a-b/x":              "x",
		"a.b":                "ab",
		"nested/deep/x.yaml": "x",
		"nested/empty/":      "",
	}
	root := t.TempDir()
	writeTree(t, root, files)
	mapFS := fstest.MapFS{"nested/empty": {Mode: fs.ModeDir | 0o755}}
	for name, content := range files {
		if name[len(name)-1] != '/' {
			mapFS[name] = &fstest.MapFile{Data: []byte(content), Mode: 0o644}
		}
	}
	leaveOutA := func(rel string, _ bool) bool { return rel == "a.yaml" }

	tests := []struct {
		name   string
		filter Filter
	}{
		{name: "every file"},
		{name: "filtered", filter: leaveOutA},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			var fromDisk, fromFS bytes.Buffer
			wantFingerprints, err := BuildWithFingerprints(&fromDisk, root, tt.filter)
			g.Expect(err).NotTo(HaveOccurred())
			gotFingerprints, err := BuildTree(&fromFS, mapFS, tt.filter)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(fromFS.Bytes()).To(Equal(fromDisk.Bytes()))
			g.Expect(gotFingerprints).To(Equal(wantFingerprints))
			g.Expect(gotFingerprints).To(HaveKey("nested/empty"))
		})
	}

	t.Run("a link", func(t *testing.T) {
		g := NewWithT(t)
		withLink := fstest.MapFS{"a.yaml": {Data: []byte("a")}, "link": {Data: []byte("a.yaml"), Mode: fs.ModeSymlink}}
		var buf bytes.Buffer
		_, err := BuildTree(&buf, withLink, nil)
		g.Expect(err).To(MatchError(ErrLinkInTree))
		g.Expect(err).To(MatchError(ContainSubstring(`"link"`)))
	})
}
