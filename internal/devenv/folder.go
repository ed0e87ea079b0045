package devenv

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/windlass-dev/windlass/internal/gitserver"
)

// branch is the branch of the dev repository.
const branch = "main"

// Limits of a folder served with --path: it is read whole into each commit.
const (
	maxFileBytes   = 8 << 20
	maxFolderBytes = 64 << 20
)

// fileStamp is what tells, without reading it, that a file changed.
type fileStamp struct {
	size    int64
	modTime time.Time
}

// folderMirror commits a local folder to the dev repository whenever a
// file in it changes.
type folderMirror struct {
	dir  string
	repo *gitserver.Repo
	// stamps are the files as last seen; digests as last committed.
	stamps  map[string]fileStamp
	digests map[string][sha256.Size]byte
}

func newFolderMirror(dir string, repo *gitserver.Repo) *folderMirror {
	return &folderMirror{dir: dir, repo: repo, stamps: map[string]fileStamp{}, digests: map[string][sha256.Size]byte{}}
}

// sync commits what changed in the folder since the last sync, and returns
// the new commit, or "" when nothing changed.
func (m *folderMirror) sync() (sha string, err error) {
	stamps, err := m.stamp()
	if err != nil {
		return "", err
	}
	if maps.Equal(stamps, m.stamps) {
		return "", nil
	}
	files, err := m.read(stamps)
	if err != nil {
		return "", err
	}
	changed, removed := map[string]string{}, []string{}
	for p, content := range files {
		if d := sha256.Sum256([]byte(content)); d != m.digests[p] {
			changed[p] = content
		}
	}
	for p := range m.digests {
		if _, ok := files[p]; !ok {
			removed = append(removed, p)
		}
	}
	slices.Sort(removed)
	if len(removed) > 0 {
		if sha, err = m.repo.Remove(branch, removed, "windlass dev: remove "+summary(removed)); err != nil {
			return "", err
		}
	}
	if len(changed) > 0 {
		if sha, err = m.repo.Commit(branch, changed, "windlass dev: update "+summary(slices.Sorted(maps.Keys(changed)))); err != nil {
			return "", err
		}
	}
	m.stamps = stamps
	m.digests = map[string][sha256.Size]byte{}
	for p, content := range files {
		m.digests[p] = sha256.Sum256([]byte(content))
	}
	return sha, nil
}

// stamp lists the regular files of the folder, outside .git folders, with
// their size and modification time, and enforces the limits.
func (m *folderMirror) stamp() (map[string]fileStamp, error) {
	stamps := map[string]fileStamp{}
	var total int64
	err := filepath.WalkDir(m.dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == ".git" {
			return filepath.SkipDir
		}
		if !d.Type().IsRegular() {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(m.dir, path)
		if err != nil {
			return err
		}
		if info.Size() > maxFileBytes {
			return fmt.Errorf("%s is larger than %d MiB: windlass dev serves manifests, not large files", rel, maxFileBytes>>20)
		}
		if total += info.Size(); total > maxFolderBytes {
			return fmt.Errorf("%s holds more than %d MiB of files: point --path at the folder of your manifests", m.dir, maxFolderBytes>>20)
		}
		stamps[filepath.ToSlash(rel)] = fileStamp{size: info.Size(), modTime: info.ModTime()}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(stamps) == 0 {
		return nil, fmt.Errorf("%s has no files: put Kubernetes manifests (or a kustomization.yaml) in it", m.dir)
	}
	return stamps, nil
}

// read returns the content of the files in stamps.
func (m *folderMirror) read(stamps map[string]fileStamp) (map[string]string, error) {
	files := make(map[string]string, len(stamps))
	for p := range stamps {
		data, err := os.ReadFile(filepath.Join(m.dir, filepath.FromSlash(p)))
		if errors.Is(err, fs.ErrNotExist) {
			continue // removed since; the next sync sees it
		}
		if err != nil {
			return nil, err
		}
		files[p] = string(data)
	}
	return files, nil
}

// summary names the first paths of a change.
func summary(paths []string) string {
	if len(paths) <= 3 {
		return fmt.Sprint(paths)
	}
	return fmt.Sprintf("%v and %d more", paths[:3], len(paths)-3)
}
