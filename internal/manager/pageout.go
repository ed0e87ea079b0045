package manager

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
)

// The controller's binary is large (every controller, the Helm SDK, the
// Kubernetes types), and starting it touches much of it: package
// initialisation, scheme and CRD registration, the first sync of the
// caches. Those pages stay mapped and count in the process's resident
// memory long after. Once the caches have synced, and then every
// pageOutInterval, the controller drops from its page tables the pages of
// its binary that are the file's content (MADV_DONTNEED on its read-only
// mappings): they stay in the page cache, what runs again comes back on
// first use without reading the disk, and the resident memory counts the
// code the controllers use rather than all the code they hold.
//
// How much a fault maps back depends on the page cache more than on the
// code: the kernel maps the cached pages around the one asked for (64
// KiB), and a file read ahead is cached in folios of hundreds of
// kilobytes, mapped whole. So the mappings are also advised MADV_RANDOM
// (a page missing from the cache is read alone, not read ahead), and the
// first two drops (at start, and once the caches have synced) evict from
// the page cache the binary's pages that no process maps
// (POSIX_FADV_DONTNEED): what the controllers run afterwards is cached
// page by page, and a fault maps the pages they run rather than whole
// folios. Only pages written to the disk are evicted, as those of a
// binary in a container image are.

// pageOutInterval is how often the binary's pages are dropped after the
// caches have synced: each time costs the pages that run again a minor
// fault (a few milliseconds of CPU for the whole working set). At 30s a
// busy controller's peak held the code of half a minute of work (56 to 57
// MiB of file-backed pages at N=1,000 in the benchmark), at 10s 43 to 47.
const pageOutInterval = 10 * time.Second

// pageOut is the Runnable that drops the binary's pages.
type pageOut struct {
	cache cache.Cache
}

// NeedLeaderElection is false: every replica maps its own binary.
func (p *pageOut) NeedLeaderElection() bool { return false }

// Start drops the pages at once (those of the start-up), once the caches
// have synced, then every pageOutInterval, until ctx ends; the first two
// drops evict them from the page cache too.
func (p *pageOut) Start(ctx context.Context) error {
	log := ctrl.LoggerFrom(ctx).WithName("pageout")
	drop := func(evict bool) {
		before := residentFileBytes()
		if _, err := pageOutBinary(evict); err != nil {
			log.V(1).Info("Could not drop the binary's pages", "error", err.Error())
			return
		}
		log.V(1).Info("Dropped the binary's pages", "evicted", evict, "residentFileBytesBefore", before, "residentFileBytesAfter", residentFileBytes())
	}
	drop(true)
	if !p.cache.WaitForCacheSync(ctx) {
		return nil
	}
	for evict := true; ; evict = false {
		drop(evict)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(pageOutInterval):
		}
	}
}

// pageOutBinary drops from the process's page tables the pages of the
// running executable's read-only mappings, advised MADV_RANDOM, and
// returns how many bytes it asked for. The pages stay in the page cache:
// code that runs again faults them back in without reading the disk,
// unless evict asks to drop from the cache the pages of the executable
// that no process maps. Writable mappings (the binary's data) and mappings
// that hold pages of their own (relocations) are left alone: only pages
// that are the file's content are dropped.
func pageOutBinary(evict bool) (int64, error) {
	exe, err := os.Executable()
	if err != nil {
		return 0, err
	}
	if exe, err = filepath.EvalSymlinks(exe); err != nil {
		return 0, err
	}
	ranges, err := fileOnlyMappings("/proc/self/smaps", exe)
	if err != nil {
		return 0, err
	}
	var total int64
	for _, r := range ranges {
		for _, advice := range []int{unix.MADV_RANDOM, unix.MADV_DONTNEED} {
			if _, _, errno := unix.Syscall(unix.SYS_MADVISE, r.start, r.end-r.start, uintptr(advice)); errno != 0 {
				return total, fmt.Errorf("madvise: %w", errno)
			}
		}
		total += int64(r.end - r.start)
	}
	if evict {
		return total, evictUnmapped(exe)
	}
	return total, nil
}

// residentFileBytes returns the process's file-backed resident memory
// (RssFile), or -1 when it cannot be read.
func residentFileBytes() int64 {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return -1
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "RssFile:"); ok {
			if kb, err := kilobytes(v); err == nil {
				return kb << 10
			}
		}
	}
	return -1
}

// kilobytes parses a value of /proc's status and smaps files, such as
// "  1234 kB".
func kilobytes(v string) (int64, error) {
	return strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
}

// addressRange is a mapping's [start, end).
type addressRange struct {
	start, end uintptr
}

// fileOnlyMappings returns the mappings of path, in the smaps file (the
// format of /proc/<pid>/smaps), that are not writable and hold no page of
// their own (Anonymous: 0 kB).
func fileOnlyMappings(smaps, path string) ([]addressRange, error) {
	f, err := os.Open(smaps)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []addressRange
	var current addressRange
	matched := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if isMappingHeader(line) {
			current, matched = mappingOf(line, path)
			continue
		}
		v, ok := strings.CutPrefix(line, "Anonymous:")
		if !ok || !matched {
			continue
		}
		if kb, err := kilobytes(v); err == nil && kb == 0 {
			out = append(out, current)
		}
	}
	return out, sc.Err()
}

// isMappingHeader reports whether a line of smaps begins a mapping
// ("start-end perms offset dev inode [path]") rather than giving one of its
// fields ("Name: value").
func isMappingHeader(line string) bool {
	fields := strings.Fields(line)
	return len(fields) >= 5 && strings.Contains(fields[0], "-") && !strings.HasSuffix(fields[0], ":")
}

// mappingOf parses a mapping's header line of smaps and returns its range
// when it maps path and is not writable.
func mappingOf(line, path string) (addressRange, bool) {
	fields := strings.Fields(line)
	if len(fields) < 6 || fields[5] != path || strings.Contains(fields[1], "w") {
		return addressRange{}, false
	}
	lo, hi, ok := strings.Cut(fields[0], "-")
	if !ok {
		return addressRange{}, false
	}
	start, err1 := strconv.ParseUint(lo, 16, 64)
	end, err2 := strconv.ParseUint(hi, 16, 64)
	if err1 != nil || err2 != nil || end <= start {
		return addressRange{}, false
	}
	return addressRange{start: uintptr(start), end: uintptr(end)}, true
}
