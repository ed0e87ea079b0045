package manager

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// evictUnmapped drops from the page cache the pages of the file at path
// that no process maps (and that are written to the disk).
func evictUnmapped(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED); err != nil {
		return fmt.Errorf("fadvise: %w", err)
	}
	return nil
}
