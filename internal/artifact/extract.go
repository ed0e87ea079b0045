package artifact

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	securejoin "github.com/cyphar/filepath-securejoin"

	"github.com/windlass-dev/windlass/api/meta"
	"github.com/windlass-dev/windlass/internal/archive"
	"github.com/windlass-dev/windlass/internal/workdir"
)

// ExtractTo verifies the artifact's digest and extracts it under destDir.
// When subPath is not empty, only the directory at subPath inside the
// artifact is copied, its content landing directly in destDir; subPath is
// slash-separated and may not be absolute or contain ".." or a backslash.
// opts are passed to archive.Extract. The artifact file is read once, so it
// cannot change between verification and extraction.
func (s *Storage) ExtractTo(a meta.Artifact, subPath, destDir string, opts ...archive.ExtractOption) error {
	sub, err := cleanSubPath(subPath)
	if err != nil {
		return err
	}
	f, err := s.openVerified(a)
	if err != nil {
		return err
	}
	defer f.Close()
	if sub == "" {
		if err := archive.Extract(f, destDir, opts...); err != nil {
			return fmt.Errorf("extracting artifact %s: %w", a.Path, err)
		}
		return nil
	}
	return extractSubPath(f, a.Path, sub, destDir, opts)
}

// openVerified opens the file of a, checks it against a's digest and
// returns it rewound: read once, it cannot change between the check and
// its use. The caller closes it.
func (s *Storage) openVerified(a meta.Artifact) (*os.File, error) {
	f, err := s.open(a)
	if err != nil {
		return nil, err
	}
	if err := verifyFile(f, a); err != nil {
		f.Close()
		return nil, err
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		f.Close()
		return nil, fmt.Errorf("rewinding artifact %s: %w", a.Path, err)
	}
	return f, nil
}

// cleanSubPath validates a path inside an artifact and returns it cleaned;
// "" stands for the whole artifact.
func cleanSubPath(p string) (string, error) {
	if strings.ContainsAny(p, "\\\x00") || path.IsAbs(p) {
		return "", fmt.Errorf("invalid path %q in artifact: absolute, or contains a backslash or NUL", p)
	}
	for _, e := range strings.Split(p, "/") {
		if e == ".." {
			return "", fmt.Errorf("invalid path %q in artifact: contains '..'", p)
		}
	}
	if c := path.Clean(p); c != "." {
		return c, nil
	}
	return "", nil
}

// extractSubPath extracts r into a private temporary directory and copies
// the directory at sub into destDir.
func extractSubPath(r io.Reader, artifactPath, sub, destDir string, opts []archive.ExtractOption) error {
	tmp, err := workdir.MkdirTemp("windlass-artifact-")
	if err != nil {
		return fmt.Errorf("creating temporary directory: %w", err)
	}
	defer os.RemoveAll(tmp)
	if err := archive.Extract(r, tmp, opts...); err != nil {
		return fmt.Errorf("extracting artifact %s: %w", artifactPath, err)
	}
	src, err := securejoin.SecureJoin(tmp, filepath.FromSlash(sub))
	if err != nil {
		return fmt.Errorf("confining path %q in artifact %s: %w", sub, artifactPath, err)
	}
	fi, err := os.Lstat(src)
	if errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("path %q not found in artifact %s", sub, artifactPath)
	}
	if err != nil {
		return fmt.Errorf("reading path %q in artifact %s: %w", sub, artifactPath, err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("path %q in artifact %s is not a directory", sub, artifactPath)
	}
	if err := copyTree(src, destDir); err != nil {
		return fmt.Errorf("copying %q of artifact %s: %w", sub, artifactPath, err)
	}
	return nil
}

// copyTree copies the directories and regular files under src into dst.
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			return os.MkdirAll(target, info.Mode().Perm()|0o700)
		case d.Type().IsRegular():
			return copyFile(p, target, info.Mode().Perm())
		default:
			return nil // archive.Extract creates nothing else
		}
	})
}

// copyFile copies the regular file src to dst with the given mode.
func copyFile(src, dst string, mode fs.FileMode) (err error) {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, mode)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := out.Close(); cerr != nil && err == nil {
			err = cerr
		}
	}()
	_, err = io.Copy(out, in)
	return err
}
