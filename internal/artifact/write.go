package artifact

import (
	"crypto/sha256"
	"fmt"
	"io"
	"os"
	"path/filepath"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/windlass-dev/windlass/api/meta"
	"github.com/windlass-dev/windlass/internal/archive"
)

// fileMode is the mode of artifact files; the base path (0750) keeps them
// from other users.
const fileMode = 0o640

// Archive writes a reproducible tar.gz of the tree under dir, minus what
// filter excludes, as the artifact's file, and sets the artifact's Digest,
// Size and LastUpdateTime. The file appears under its final name only once
// complete; on error, any previous file of the same name is left untouched.
//
// The directory fingerprints of the tree are kept for the object's last two
// trees, for PathChanged.
func (s *Storage) Archive(a *meta.Artifact, dir string, filter archive.Filter) error {
	return s.build(a, func(w io.Writer) (archive.Fingerprints, error) {
		return archive.BuildWithFingerprints(w, dir, filter)
	})
}

// ArchiveTree is Archive of a tree that is not a directory on disk (see
// archive.BuildTree): the same tree gives the same artifact either way.
func (s *Storage) ArchiveTree(a *meta.Artifact, tree archive.Tree, filter archive.Filter) error {
	return s.build(a, func(w io.Writer) (archive.Fingerprints, error) {
		return archive.BuildTree(w, tree, filter)
	})
}

// build writes the artifact's file with write, as Archive does, and
// records the fingerprints of its tree.
func (s *Storage) build(a *meta.Artifact, write func(io.Writer) (archive.Fingerprints, error)) error {
	var fps archive.Fingerprints
	err := s.writeAtomic(a, func(w io.Writer) (err error) {
		fps, err = write(w)
		return err
	})
	if err == nil {
		s.fingerprints.record(*a, fps)
	}
	return err
}

// Copy writes what r yields as the artifact's file, with the same atomicity
// as Archive, and sets the artifact's Digest, Size and LastUpdateTime.
func (s *Storage) Copy(a *meta.Artifact, r io.Reader) error {
	return s.writeAtomic(a, func(w io.Writer) error {
		_, err := io.Copy(w, r)
		return err
	})
}

// countingWriter counts the bytes written through it.
type countingWriter struct{ n int64 }

// Write implements io.Writer.
func (c *countingWriter) Write(p []byte) (int, error) {
	c.n += int64(len(p))
	return len(p), nil
}

// writeAtomic writes the artifact's file through write into a temporary file
// in the same directory, syncs it and renames it into place.
func (s *Storage) writeAtomic(a *meta.Artifact, write func(io.Writer) error) (err error) {
	lp, err := s.localPath(a.Path)
	if err != nil {
		return err
	}
	dir := filepath.Dir(lp)
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return fmt.Errorf("creating artifact directory for %s: %w", a.Path, err)
	}
	tmp, err := os.CreateTemp(dir, tempPrefix+"*")
	if err != nil {
		return fmt.Errorf("creating temporary file for %s: %w", a.Path, err)
	}
	defer func() {
		if err != nil {
			_ = tmp.Close()
			_ = os.Remove(tmp.Name())
		}
	}()
	h := sha256.New()
	size := &countingWriter{}
	if err := write(io.MultiWriter(tmp, h, size)); err != nil {
		return fmt.Errorf("writing artifact %s: %w", a.Path, err)
	}
	if err := finishTemp(tmp, lp); err != nil {
		return fmt.Errorf("storing artifact %s: %w", a.Path, err)
	}
	syncDir(dir)
	a.Digest = formatDigest(h.Sum(nil))
	a.Size = &size.n
	a.LastUpdateTime = metav1.Now()
	return nil
}

// finishTemp sets the mode of tmp, syncs and closes it, and renames it to
// target.
func finishTemp(tmp *os.File, target string) error {
	if err := tmp.Chmod(fileMode); err != nil {
		return err
	}
	if err := tmp.Sync(); err != nil {
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), target)
}

// syncDir flushes a directory's entries to disk, so that a rename survives a
// crash. Errors are ignored: not every platform can sync a directory.
func syncDir(dir string) {
	d, err := os.Open(dir)
	if err != nil {
		return
	}
	_ = d.Sync()
	_ = d.Close()
}
