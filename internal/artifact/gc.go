package artifact

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/windlass-dev/windlass/api/meta"
)

// minTempAge is the least age at which GarbageCollect removes a leftover
// temporary file, whatever the retention TTL, so that a slow write in
// progress is never removed from under its writer.
const minTempAge = 10 * time.Minute

// storedFile is a file of an artifact directory.
type storedFile struct {
	name    string
	modTime time.Time
}

// GarbageCollect deletes old files from the directory of the current
// artifact: beyond the newest retentionRecords files (counting current),
// and any file older than retentionTTL. It never deletes the current
// artifact, nor subdirectories. Temporary files left by interrupted writes
// are deleted once older than both retentionTTL and ten minutes. It returns
// the storage paths of the deleted files.
func (s *Storage) GarbageCollect(ctx context.Context, current meta.Artifact) ([]string, error) {
	lp, err := s.localPath(current.Path)
	if err != nil {
		return nil, err
	}
	dir, relDir := filepath.Dir(lp), path.Dir(current.Path)
	candidates, stale, err := s.listGarbage(dir, filepath.Base(lp))
	if err != nil {
		return nil, err
	}
	now := time.Now()
	for i, f := range candidates {
		if i < s.retentionRecords-1 && now.Sub(f.modTime) <= s.retentionTTL {
			continue
		}
		stale = append(stale, f.name)
	}
	var deleted []string
	var errs []error
	for _, name := range stale {
		if err := ctx.Err(); err != nil {
			return deleted, fmt.Errorf("garbage collecting %s: %w", relDir, err)
		}
		if err := os.Remove(filepath.Join(dir, name)); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, fmt.Errorf("deleting %s: %w", path.Join(relDir, name), err))
			continue
		}
		deleted = append(deleted, path.Join(relDir, name))
	}
	return deleted, errors.Join(errs...)
}

// listGarbage lists the regular files of dir other than current: the
// artifacts, newest first, and the temporary files old enough to delete.
func (s *Storage) listGarbage(dir, current string) (artifacts []storedFile, staleTemps []string, err error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("listing artifact directory: %w", err)
	}
	now := time.Now()
	tempAge := max(s.retentionTTL, minTempAge)
	for _, e := range entries {
		if !e.Type().IsRegular() || e.Name() == current {
			continue
		}
		fi, err := e.Info()
		if err != nil {
			continue // deleted meanwhile
		}
		if strings.HasPrefix(e.Name(), tempPrefix) {
			if now.Sub(fi.ModTime()) > tempAge {
				staleTemps = append(staleTemps, e.Name())
			}
			continue
		}
		artifacts = append(artifacts, storedFile{name: e.Name(), modTime: fi.ModTime()})
	}
	slices.SortFunc(artifacts, func(a, b storedFile) int {
		if c := b.modTime.Compare(a.modTime); c != 0 {
			return c
		}
		return cmp.Compare(b.name, a.name)
	})
	return artifacts, staleTemps, nil
}

// RemoveAll deletes the directory of the artifact's object
// (<kind>/<namespace>/<name>) with everything in it, and ends the deferral
// of its artifact (see Defer). It returns the storage
// path of the deleted directory, or "" when there was none.
func (s *Storage) RemoveAll(a meta.Artifact) (string, error) {
	lp, err := s.localPath(a.Path)
	if err != nil {
		return "", err
	}
	dir, relDir := filepath.Dir(lp), path.Dir(a.Path)
	s.fingerprints.forget(relDir)
	s.undefer(relDir)
	if _, err := os.Lstat(dir); errors.Is(err, os.ErrNotExist) {
		return "", nil
	}
	if err := os.RemoveAll(dir); err != nil {
		return "", fmt.Errorf("deleting artifact directory %s: %w", relDir, err)
	}
	return relDir, nil
}
