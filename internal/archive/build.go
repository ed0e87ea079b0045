package archive

import (
	"archive/tar"
	"bufio"
	"compress/gzip"
	"encoding/binary"
	"fmt"
	"hash/maphash"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// Filter decides which paths of a tree are left out of an archive. relPath is
// relative to the root and uses forward slashes; isDir tells whether the path
// is a directory. It returns true to EXCLUDE the path; an excluded directory
// is not descended into.
type Filter func(relPath string, isDir bool) bool

// modTime is the modification time written for every entry by Build.
var modTime = time.Date(1980, time.January, 1, 0, 0, 0, 0, time.UTC)

const (
	fileMode = 0o644
	execMode = 0o755
	dirMode  = 0o755
)

// builder holds the state of one Build call.
type builder struct {
	tree         Tree
	filter       Filter
	tw           *tar.Writer
	fingerprints Fingerprints
}

// Build writes a gzip-compressed tarball of the tree under root to w.
//
// The output is reproducible: the same tree gives the same bytes regardless
// of modification times, owners or the order the file system lists entries
// in. Only directories and regular files are written; directories get mode
// 0755, files 0644, or 0755 when any execute bit is set. A symbolic link is
// written as a regular file holding its target's content when the link
// resolves, possibly through other links, to a regular file inside root; it
// is skipped when it dangles, loops, resolves outside root or to a directory.
// Sockets, pipes and devices are skipped. A path containing a backslash is
// an error, because Extract would refuse it.
//
// filter may be nil. The root directory itself is not written as an entry.
func Build(w io.Writer, root string, filter Filter) error {
	_, err := BuildWithFingerprints(w, root, filter)
	return err
}

// BuildWithFingerprints is Build that also returns the fingerprints of the
// directories it wrote (see Fingerprints), or none for a tree of more than
// 20,000 directories.
func BuildWithFingerprints(w io.Writer, root string, filter Filter) (Fingerprints, error) {
	realRoot, err := resolveRoot(root)
	if err != nil {
		return nil, err
	}
	return BuildTree(w, dirTree{root: realRoot}, filter)
}

// BuildTree is BuildWithFingerprints of a Tree: the same tree gives the
// same bytes and fingerprints whether it is read from disk (Dir) or from
// elsewhere. A symbolic link in a tree other than Dir is an error that
// matches ErrLinkInTree.
func BuildTree(w io.Writer, tree Tree, filter Filter) (Fingerprints, error) {
	// The compressor writes a few hundred bytes at a time.
	bw := bufio.NewWriterSize(w, 32<<10)
	gw := gzipWriters.Get().(*gzip.Writer)
	defer gzipWriters.Put(gw)
	gw.Reset(bw)
	b := &builder{tree: tree, filter: filter, tw: tar.NewWriter(gw), fingerprints: Fingerprints{}}
	if _, err := b.walkDir(""); err != nil {
		return nil, err
	}
	if err := b.tw.Close(); err != nil {
		return nil, fmt.Errorf("closing tar stream: %w", err)
	}
	if err := gw.Close(); err != nil {
		return nil, fmt.Errorf("closing gzip stream: %w", err)
	}
	if err := bw.Flush(); err != nil {
		return nil, err
	}
	if len(b.fingerprints) > maxFingerprints {
		return nil, nil
	}
	return b.fingerprints, nil
}

// gzipWriters keeps compressors for reuse: each holds about a megabyte of
// tables, which a new one would allocate and clear again. The default level
// compresses text almost as well as the best at a fraction of its time.
var gzipWriters = sync.Pool{New: func() any {
	w, _ := gzip.NewWriterLevel(io.Discard, gzip.DefaultCompression) // a valid level cannot fail
	return w
}}

// resolveRoot returns the absolute, symlink-free path of root and checks that
// it is a directory.
func resolveRoot(root string) (string, error) {
	abs, err := filepath.Abs(root)
	if err != nil {
		return "", fmt.Errorf("resolving archive root: %w", err)
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return "", fmt.Errorf("resolving archive root: %w", err)
	}
	fi, err := os.Stat(real)
	if err != nil {
		return "", fmt.Errorf("reading archive root: %w", err)
	}
	if !fi.IsDir() {
		return "", fmt.Errorf("archive root %q is not a directory", root)
	}
	return real, nil
}

// walkDir writes the entries of the directory rel (relative to the root, ""
// for the root itself) in lexical order, recursing into subdirectories, and
// returns the directory's fingerprint.
func (b *builder) walkDir(rel string) (uint64, error) {
	entries, err := b.tree.ReadDir(treePath(rel))
	if err != nil {
		return 0, fmt.Errorf("reading directory %q: %w", displayPath(rel), err)
	}
	var h maphash.Hash
	h.SetSeed(fingerprintSeed)
	for _, e := range entries {
		written, err := b.walkEntry(path.Join(rel, e.Name()), e.Type())
		if err != nil {
			return 0, err
		}
		if written.kind != 0 {
			h.WriteString(e.Name())
			h.WriteByte(0) // names hold no NUL: the name ends here
			h.WriteByte(written.kind)
			var sum [8]byte
			binary.LittleEndian.PutUint64(sum[:], written.fingerprint)
			h.Write(sum[:])
		}
	}
	fp := h.Sum64()
	if len(b.fingerprints) <= maxFingerprints {
		b.fingerprints[rel] = fp
	}
	return fp, nil
}

// entry is what walkEntry wrote: a kind (0 for nothing, 'd' for a
// directory, 'f' for a file, 'x' for an executable file) and the
// fingerprint of its content.
type entry struct {
	kind        byte
	fingerprint uint64
}

// walkEntry writes one entry of the tree, dispatching on its type.
func (b *builder) walkEntry(rel string, typ fs.FileMode) (entry, error) {
	isDir := typ.IsDir()
	if b.filter != nil && b.filter(rel, isDir) {
		return entry{}, nil
	}
	if strings.Contains(rel, `\`) {
		return entry{}, fmt.Errorf("path %q contains a backslash, which archives may not hold: exclude it", rel)
	}
	switch {
	case isDir:
		if err := b.writeDir(rel); err != nil {
			return entry{}, err
		}
		fp, err := b.walkDir(rel)
		return entry{kind: 'd', fingerprint: fp}, err
	case typ.IsRegular():
		return b.writeFile(rel, rel)
	case typ&fs.ModeSymlink != 0:
		return b.writeSymlink(rel)
	default:
		return entry{}, nil // sockets, pipes, devices: never archived
	}
}

// writeDir writes a directory entry.
func (b *builder) writeDir(rel string) error {
	hdr := newHeader(rel+"/", tar.TypeDir, dirMode, 0)
	if err := b.tw.WriteHeader(hdr); err != nil {
		return fmt.Errorf("writing entry %q: %w", rel, err)
	}
	return nil
}

// writeSymlink writes the regular file a symbolic link resolves to, when it
// resolves inside the tree; other links are skipped.
func (b *builder) writeSymlink(rel string) (entry, error) {
	links, ok := b.tree.(linkResolver)
	if !ok {
		return entry{}, linkError(rel)
	}
	target, ok := links.resolveLink(rel)
	if !ok {
		return entry{}, nil
	}
	return b.writeFile(rel, target)
}

// within reports whether p is root or lies under it; both must be clean,
// absolute paths.
func within(root, p string) bool {
	rel, err := filepath.Rel(root, p)
	if err != nil {
		return false
	}
	return rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}

// writeFile writes the regular file at src, in the tree, under the entry
// name rel.
func (b *builder) writeFile(rel, src string) (_ entry, err error) {
	f, err := b.tree.Open(src)
	if err != nil {
		return entry{}, fmt.Errorf("opening %q: %w", rel, err)
	}
	defer func() {
		if cerr := f.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("closing %q: %w", rel, cerr)
		}
	}()
	fi, err := f.Stat()
	if err != nil {
		return entry{}, fmt.Errorf("reading %q: %w", rel, err)
	}
	if !fi.Mode().IsRegular() {
		return entry{}, nil // replaced by something else since the walk listed it
	}
	mode, kind := int64(fileMode), byte('f')
	if fi.Mode().Perm()&0o111 != 0 {
		mode, kind = execMode, 'x'
	}
	if err := b.tw.WriteHeader(newHeader(rel, tar.TypeReg, mode, fi.Size())); err != nil {
		return entry{}, fmt.Errorf("writing entry %q: %w", rel, err)
	}
	var h maphash.Hash
	h.SetSeed(fingerprintSeed)
	if _, err := io.CopyN(io.MultiWriter(b.tw, &h), f, fi.Size()); err != nil {
		return entry{}, fmt.Errorf("writing content of %q: %w", rel, err)
	}
	return entry{kind: kind, fingerprint: h.Sum64()}, nil
}

// newHeader returns a normalised tar header.
func newHeader(name string, typ byte, mode, size int64) *tar.Header {
	return &tar.Header{
		Typeflag: typ,
		Name:     name,
		Mode:     mode,
		Size:     size,
		ModTime:  modTime,
		Format:   tar.FormatPAX,
	}
}

// displayPath renders a relative path for error messages.
func displayPath(rel string) string {
	if rel == "" {
		return "."
	}
	return rel
}
