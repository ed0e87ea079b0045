package manager

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"golang.org/x/sys/unix"
)

// TestPageOutBinary maps every page of the test binary's read-only
// mappings (MADV_POPULATE_READ), drops them, and checks that the process's
// file-backed resident memory falls by more than half, with or without the
// eviction from the page cache, and that the mappings are left advised
// MADV_RANDOM (smaps' "rr").
func TestPageOutBinary(t *testing.T) {
	for _, evict := range []bool{false, true} {
		t.Run(fmt.Sprintf("evict=%t", evict), func(t *testing.T) {
			g := NewWithT(t)
			ranges := binaryMappings(t)
			for _, r := range ranges {
				_, _, errno := unix.Syscall(unix.SYS_MADVISE, r.start, r.end-r.start, unix.MADV_POPULATE_READ)
				g.Expect(errno).To(BeZero(), "populating %x-%x", r.start, r.end)
			}
			before := residentFileBytes()
			g.Expect(before).To(BeNumerically(">", 0))
			n, err := pageOutBinary(evict)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(n).To(BeNumerically(">", 0))
			after := residentFileBytes()
			g.Expect(after).To(BeNumerically("<", before/2), "RssFile %d bytes before, %d after", before, after)
			g.Expect(readOnlyMappingFlags(t, ranges)).To(HaveEach(ContainElement("rr")))
		})
	}
}

// binaryMappings returns the read-only mappings of the test binary that
// hold no page of their own.
func binaryMappings(t *testing.T) []addressRange {
	t.Helper()
	ranges, err := fileOnlyMappings("/proc/self/smaps", testBinary(t))
	if err != nil || len(ranges) == 0 {
		t.Fatalf("no read-only mapping of the test binary (%v)", err)
	}
	return ranges
}

func testBinary(t *testing.T) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if exe, err = filepath.EvalSymlinks(exe); err != nil {
		t.Fatal(err)
	}
	return exe
}

// readOnlyMappingFlags returns the VmFlags of each of ranges, mappings of
// the test binary.
func readOnlyMappingFlags(t *testing.T, ranges []addressRange) [][]string {
	t.Helper()
	exe := testBinary(t)
	data, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		t.Fatal(err)
	}
	var flags [][]string
	var current addressRange
	for _, line := range strings.Split(string(data), "\n") {
		if isMappingHeader(line) {
			current, _ = mappingOf(line, exe)
			continue
		}
		if v, ok := strings.CutPrefix(line, "VmFlags:"); ok && slices.Contains(ranges, current) {
			flags = append(flags, strings.Fields(v))
		}
	}
	if len(flags) != len(ranges) {
		t.Fatalf("VmFlags of %d mappings of %d", len(flags), len(ranges))
	}
	return flags
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
