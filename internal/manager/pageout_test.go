package manager

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
)

// rssFile returns the process's RssFile in kB.
func rssFile(g *WithT) int64 {
	data, err := os.ReadFile("/proc/self/status")
	g.Expect(err).NotTo(HaveOccurred())
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "RssFile:"); ok {
			n, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			g.Expect(err).NotTo(HaveOccurred())
			return n
		}
	}
	g.Expect("RssFile").To(BeEmpty(), "no RssFile in /proc/self/status")
	return 0
}

// TestPageOutBinary checks that handing the test binary's read-only pages
// back lowers the process's file-backed resident memory, and that the
// process goes on running what it needs.
func TestPageOutBinary(t *testing.T) {
	g := NewWithT(t)
	before := rssFile(g)
	n, err := pageOutBinary()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(n).To(BeNumerically(">", 0))
	after := rssFile(g)
	g.Expect(after).To(BeNumerically("<", before/2), "RssFile %d kB before, %d kB after", before, after)
}

func TestFileOnlyMappings(t *testing.T) {
	g := NewWithT(t)
	smaps := filepath.Join(t.TempDir(), "smaps")
	g.Expect(os.WriteFile(smaps, []byte(`00400000-01950000 r--p 00000000 fe:00 123 /bin/windlass
Rss:                3000 kB
Anonymous:             0 kB
VmFlags: rd mr mw me dw sd
01950000-0449f000 r-xp 01550000 fe:00 123 /bin/windlass
Anonymous:             0 kB
VmFlags: rd ex mr mw me dw sd
07668000-07669000 r--p 07267000 fe:00 123 /bin/windlass
Anonymous:             4 kB
07669000-07800000 rw-p 07268000 fe:00 123 /bin/windlass
Anonymous:            12 kB
07800000-07900000 rw-p 00000000 00:00 0
Anonymous:           100 kB
7f0000000000-7f0000001000 r--p 00000000 fe:00 456 /lib/libc.so
Anonymous:             0 kB
`), 0o600)).To(Succeed())
	got, err := fileOnlyMappings(smaps, "/bin/windlass")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got).To(Equal([]addressRange{{0x400000, 0x1950000}, {0x1950000, 0x449f000}}),
		"read-only mappings of the binary, without the relocated one nor the writable ones")
}
