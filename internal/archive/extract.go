package archive

import (
	"archive/tar"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"

	securejoin "github.com/cyphar/filepath-securejoin"
)

// DefaultMaxSize is the default cap, in bytes, on the uncompressed size of an
// archive given to Extract.
const DefaultMaxSize int64 = 100 << 20

// ErrTooLarge is returned, wrapped, by Extract when the uncompressed archive
// exceeds the size cap.
var ErrTooLarge = errors.New("archive exceeds the maximum uncompressed size")

// ErrUnsafeEntry is returned, wrapped, by Extract when an entry has a name or
// a type that is refused.
var ErrUnsafeEntry = errors.New("unsafe archive entry")

// ExtractOption changes the behaviour of Extract.
type ExtractOption func(*extractOptions)

type extractOptions struct {
	maxSize      int64
	skipSymlinks bool
}

// WithMaxSize sets the cap on the uncompressed size of the archive, tar
// headers included. A value of zero or less means DefaultMaxSize.
func WithMaxSize(n int64) ExtractOption {
	return func(o *extractOptions) {
		if n > 0 {
			o.maxSize = n
		}
	}
}

// WithSkipSymlinks makes Extract skip symbolic and hard links instead of
// rejecting the archive.
func WithSkipSymlinks() ExtractOption {
	return func(o *extractOptions) { o.skipSymlinks = true }
}

// Extract reads a gzip-compressed tarball from r and writes its directories
// and regular files under dir, which is created if needed.
//
// The whole archive is rejected when an entry name is empty, absolute,
// contains a backslash or a ".." element; when it holds a symbolic or hard
// link (unless WithSkipSymlinks is given); when it holds a device, a FIFO or
// any other special type; or when its uncompressed size, tar headers
// included, exceeds the cap (DefaultMaxSize unless WithMaxSize is given).
// Directories are created with at least owner rwx and at most 0755; files
// keep only their rwx permission bits, gain owner read and write, and are
// never group- or world-writable. Modification times are not preserved:
// extracted files carry the time of extraction. PAX global headers are
// ignored.
//
// On error, entries extracted so far may remain in dir; nothing is ever
// written outside dir.
func Extract(r io.Reader, dir string, opts ...ExtractOption) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("creating extraction directory: %w", err)
	}
	return extractWanted(r, dir, newExtractOptions(opts), nil)
}

// newExtractOptions applies opts to the defaults.
func newExtractOptions(opts []ExtractOption) extractOptions {
	o := extractOptions{maxSize: DefaultMaxSize}
	for _, opt := range opts {
		opt(&o)
	}
	return o
}

// wantFunc tells whether the entry at name, cleaned as cleanEntryName
// returns it, is written; nil wants every entry.
type wantFunc func(name string, isDir bool) bool

// extractWanted reads the archive in r and writes under dir the entries
// that want wants. Every entry is checked, written or not, and the size cap
// counts the whole archive.
func extractWanted(r io.Reader, dir string, o extractOptions, want wantFunc) error {
	gr, err := gzip.NewReader(r)
	if err != nil {
		return fmt.Errorf("reading gzip header: %w", err)
	}
	defer gr.Close()
	lr := &limitReader{r: gr, remaining: o.maxSize}
	tr := tar.NewReader(lr)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return drain(lr)
		}
		if err != nil {
			return fmt.Errorf("reading archive: %w", err)
		}
		if err := extractEntry(tr, hdr, dir, o, lr, want); err != nil {
			return err
		}
	}
}

// drain reads what follows the end of the tar stream, so that the gzip
// checksum is verified; the size cap still applies.
func drain(r io.Reader) error {
	if _, err := io.Copy(io.Discard, r); err != nil {
		return fmt.Errorf("reading archive trailer: %w", err)
	}
	return nil
}

// extractEntry writes one tar entry under dir.
func extractEntry(tr *tar.Reader, hdr *tar.Header, dir string, o extractOptions, lr *limitReader, want wantFunc) error {
	switch hdr.Typeflag {
	case tar.TypeXGlobalHeader:
		return nil
	case tar.TypeSymlink, tar.TypeLink:
		if o.skipSymlinks {
			return nil
		}
		return fmt.Errorf("%w: %q is a link", ErrUnsafeEntry, hdr.Name)
	case tar.TypeDir, tar.TypeReg:
	default:
		return fmt.Errorf("%w: %q has unsupported type %q", ErrUnsafeEntry, hdr.Name, string(hdr.Typeflag))
	}
	name, err := cleanEntryName(hdr.Name)
	if err != nil {
		return err
	}
	if name == "" {
		if hdr.Typeflag == tar.TypeDir {
			return nil // the root directory itself
		}
		return fmt.Errorf("%w: file entry %q names the root", ErrUnsafeEntry, hdr.Name)
	}
	isDir := hdr.Typeflag == tar.TypeDir
	if !isDir && hdr.Size > lr.remaining {
		return fmt.Errorf("%w: entry %q is %d bytes", ErrTooLarge, name, hdr.Size)
	}
	if want != nil && !want(name, isDir) {
		return nil // its content is read past, and counted, by the next tr.Next
	}
	target, err := securejoin.SecureJoin(dir, name)
	if err != nil {
		return fmt.Errorf("confining entry %q: %w", name, err)
	}
	if isDir {
		return extractDir(target, name, hdr.Mode)
	}
	return extractFile(tr, target, name, hdr.Mode)
}

// cleanEntryName validates a tar entry name and returns it cleaned, without a
// leading "./" or a trailing slash; "" stands for the root.
func cleanEntryName(name string) (string, error) {
	switch {
	case name == "":
		return "", fmt.Errorf("%w: empty name", ErrUnsafeEntry)
	case strings.Contains(name, `\`):
		return "", fmt.Errorf("%w: %q contains a backslash", ErrUnsafeEntry, name)
	case strings.HasPrefix(name, "/"):
		return "", fmt.Errorf("%w: %q is absolute", ErrUnsafeEntry, name)
	case strings.ContainsRune(name, 0):
		return "", fmt.Errorf("%w: %q contains a NUL byte", ErrUnsafeEntry, name)
	}
	for _, elem := range strings.Split(name, "/") {
		if elem == ".." {
			return "", fmt.Errorf("%w: %q contains a '..' element", ErrUnsafeEntry, name)
		}
	}
	clean := path.Clean(name)
	if clean == "." {
		return "", nil
	}
	return clean, nil
}

// extractDir creates a directory entry with a safe mode.
func extractDir(target, name string, mode int64) error {
	if err := os.MkdirAll(target, 0o755); err != nil {
		return fmt.Errorf("creating directory %q: %w", name, err)
	}
	if err := os.Chmod(target, dirPerm(mode)); err != nil {
		return fmt.Errorf("setting mode of directory %q: %w", name, err)
	}
	return nil
}

// dirPerm returns the mode given to an extracted directory: owner rwx, at
// most 0755.
func dirPerm(mode int64) os.FileMode {
	return os.FileMode(mode)&0o755 | 0o700
}

// filePerm returns the mode given to an extracted file: owner rw, at most
// 0755.
func filePerm(mode int64) os.FileMode {
	return os.FileMode(mode)&0o755 | 0o600
}

// extractFile writes a regular file entry, creating missing parents.
func extractFile(r io.Reader, target, name string, mode int64) (err error) {
	if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
		return fmt.Errorf("creating parent of %q: %w", name, err)
	}
	perm := filePerm(mode)
	f, err := os.OpenFile(target, os.O_CREATE|os.O_TRUNC|os.O_WRONLY|noFollow, perm)
	if err != nil {
		return fmt.Errorf("creating file %q: %w", name, err)
	}
	defer func() {
		if cerr := f.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("closing file %q: %w", name, cerr)
		}
	}()
	if _, err := io.Copy(f, r); err != nil {
		return fmt.Errorf("writing file %q: %w", name, err)
	}
	if err := f.Chmod(perm); err != nil {
		return fmt.Errorf("setting mode of %q: %w", name, err)
	}
	return nil
}

// limitReader fails with ErrTooLarge once more than its budget is read.
type limitReader struct {
	r         io.Reader
	remaining int64
}

// Read implements io.Reader.
func (l *limitReader) Read(p []byte) (int, error) {
	if l.remaining <= 0 {
		// Allow the reader to report a clean EOF at the exact limit.
		var one [1]byte
		n, err := l.r.Read(one[:])
		if n > 0 {
			return 0, ErrTooLarge
		}
		return 0, err
	}
	if int64(len(p)) > l.remaining {
		p = p[:l.remaining]
	}
	n, err := l.r.Read(p)
	l.remaining -= int64(n)
	return n, err
}
