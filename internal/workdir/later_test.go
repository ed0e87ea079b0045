package workdir

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
)

// TestRemoveLaterRemovesEveryFolder: folders handed over, more than the
// backlog holds, are all removed with what they hold; WaitRemoved waits
// for them.
func TestRemoveLaterRemovesEveryFolder(t *testing.T) {
	g := NewWithT(t)
	useTempDir(t)
	var dirs []string
	for i := range 3 * laterBacklog {
		dir, err := MkdirTemp("later-*")
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(os.MkdirAll(filepath.Join(dir, "a", "b"), 0o755)).To(Succeed())
		g.Expect(os.WriteFile(filepath.Join(dir, "a", "b", "f"), []byte(fmt.Sprint(i)), 0o644)).To(Succeed())
		dirs = append(dirs, dir)
	}
	for _, dir := range dirs {
		RemoveLater(dir)
	}
	WaitRemoved()
	for _, dir := range dirs {
		g.Expect(dir).NotTo(BeADirectory())
	}
	work, err := Dir()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(os.ReadDir(work)).To(BeEmpty())
}
