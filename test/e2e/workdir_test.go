package e2e

import (
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/windlass-dev/windlass/internal/workdir"
)

// A controller killed with SIGKILL (as the OOM killer does) leaves its
// work folder in $TMPDIR, here the artifact it extracted for the
// Kustomization; the next controller removes it as it starts, and says so
// in its log.
func TestController_SweepsTheWorkFolderOfAKilledOne(t *testing.T) {
	g := NewWithT(t)
	// The controllers inherit it; no test runs in parallel with this one.
	t.Setenv("TMPDIR", t.TempDir())
	own, err := workdir.Dir() // this process's, live: never swept
	g.Expect(err).NotTo(HaveOccurred())
	st := startCrashStory(t, g, "workdir-", oneObject)
	st.proc.Kill()

	left := leftFolders(g, own)
	g.Expect(left).To(HaveLen(1), "the killed controller's work folder")
	files, err := filepath.Glob(filepath.Join(left[0], "windlass-artifact-*", "*"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(files).NotTo(BeEmpty(), "the killed controller's extracted artifact")

	restarted := startShardController(t, g, st.shard, st.storage)
	g.Expect(left[0]).NotTo(BeAnExistingFile())
	g.Expect(left[0] + ".lock").NotTo(BeAnExistingFile())
	g.Expect(restarted.Output()).To(MatchRegexp(`Swept the work folders of dead processes.*"folders": 1, "bytes": [1-9]`))
	g.Expect(own).To(BeADirectory(), "a live process's folder stays")
}

// leftFolders returns the work folders under workdir.Root but own (none
// when no process made the root).
func leftFolders(g *WithT, own string) []string {
	entries, err := os.ReadDir(workdir.Root())
	if os.IsNotExist(err) {
		return nil
	}
	g.Expect(err).NotTo(HaveOccurred())
	var out []string
	for _, e := range entries {
		if dir := filepath.Join(workdir.Root(), e.Name()); e.IsDir() && dir != own {
			out = append(out, dir)
		}
	}
	return out
}
