package term

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/windlass-dev/windlass/internal/testutil"
)

// TestSpinner: the line is drawn, redrawn in place, erased before a line
// printed above it, and erased on Stop; nothing is drawn after Stop.
func TestSpinner(t *testing.T) {
	g := NewWithT(t)
	var out testutil.LockedBuffer
	s := NewSpinner(&out)
	s.Start("fetching")
	g.Eventually(func() int { return strings.Count(out.String(), "fetching") }).Should(BeNumerically(">=", 3), "redrawn")
	s.SetText("applying")
	s.Println("✔ fetched")
	took := s.Stop()
	g.Expect(took).To(BeNumerically(">", 0))
	text := out.String()
	g.Expect(text).To(ContainSubstring(eraseLine + "✔ fetched\n"))
	g.Expect(text).To(ContainSubstring("applying 0s"))
	g.Expect(text).To(HaveSuffix(eraseLine))
	time.Sleep(250 * time.Millisecond)
	g.Expect(out.String()).To(Equal(text), "nothing drawn after Stop")
}

// TestIsTerminal: buffers and files are not terminals.
func TestIsTerminal(t *testing.T) {
	g := NewWithT(t)
	g.Expect(IsTerminal(&bytes.Buffer{})).To(BeFalse())
	f, err := os.Create(filepath.Join(t.TempDir(), "out"))
	g.Expect(err).NotTo(HaveOccurred())
	defer f.Close()
	g.Expect(IsTerminal(f)).To(BeFalse())
}
