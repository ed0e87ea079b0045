package manager

import (
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
)

// TestPageOutBinary checks that dropping the test binary's read-only pages
// lowers the process's file-backed resident memory.
func TestPageOutBinary(t *testing.T) {
	g := NewWithT(t)
	before := residentFileBytes()
	g.Expect(before).To(BeNumerically(">", 0))
	n, err := pageOutBinary()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(n).To(BeNumerically(">", 0))
	after := residentFileBytes()
	g.Expect(after).To(BeNumerically("<", before/2), "RssFile %d bytes before, %d after", before, after)
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
