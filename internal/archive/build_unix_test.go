//go:build unix

package archive

import (
	"path/filepath"
	"syscall"
	"testing"

	. "github.com/onsi/gomega"
)

func TestBuildSkipsSpecialFiles(t *testing.T) {
	g := NewWithT(t)
	root := t.TempDir()
	writeTree(t, root, map[string]string{"a.yaml": "a"})
	g.Expect(syscall.Mkfifo(filepath.Join(root, "fifo"), 0o644)).To(Succeed())
	got := listTarGz(t, buildBytes(t, root, nil))
	g.Expect(got).To(HaveLen(1))
	g.Expect(got[0].Name).To(Equal("a.yaml"))
}
