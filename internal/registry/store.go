package registry

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"iter"
	"os"
	"path/filepath"
	"sync"

	"k8s.io/apimachinery/pkg/util/validation"
)

// Names of the store's folders and files.
const (
	imagesDir    = "images"
	tagsFileName = "tags"
	metaFileName = "meta.json"
	// tempGlob matches the temporary files of the store; NewStore removes
	// those a stopped process left.
	tempGlob = ".*.tmp"
)

// maxTagLine bounds a line of a tags file: a tag has at most 128
// characters, so a longer line is a damaged file.
const maxTagLine = 1024

// Store keeps the tag lists of ImageRepositories on disk: one folder a
// repository, <root>/images/<namespace>/<name>, with the file tags (the
// tags in byte order, one a line) and meta.json (the canonical image name,
// the revision and the count). Every replacement is a rename of a file
// written and synced beside its target, so a reader sees the old file or
// the new one, never a part. A Store is safe for concurrent use; one
// process owns a root.
type Store struct {
	root string
	// mu orders replacing a repository's two files (under Lock) against
	// opening them together (under RLock), so that a Snapshot's meta
	// always describes its tags.
	mu sync.RWMutex
}

// NewStore returns the store under root, creating the folder, and removes
// the temporary files a stopped process left there.
func NewStore(root string) (*Store, error) {
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, fmt.Errorf("tag store %q: %w", root, err)
	}
	dir := filepath.Join(abs, imagesDir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("creating the tag store: %w", err)
	}
	leftovers, _ := filepath.Glob(filepath.Join(dir, "*", "*", tempGlob))
	for _, f := range leftovers {
		_ = os.Remove(f)
	}
	return &Store{root: dir}, nil
}

// repoDir returns the folder of an ImageRepository, after checking that
// its namespace is a DNS-1123 label and its name a DNS-1123 subdomain (so
// neither can hold a '/' or be "..").
func (s *Store) repoDir(namespace, name string) (string, error) {
	if len(validation.IsDNS1123Label(namespace)) > 0 {
		return "", fmt.Errorf("%w: the namespace %q is not a DNS-1123 label", ErrBadRequest, namespace)
	}
	if len(validation.IsDNS1123Subdomain(name)) > 0 {
		return "", fmt.Errorf("%w: the name %q is not a DNS-1123 subdomain", ErrBadRequest, name)
	}
	return filepath.Join(s.root, namespace, name), nil
}

// meta is the content of meta.json.
type meta struct {
	Image    string `json:"image"`
	Revision string `json:"revision"`
	Count    int    `json:"count"`
}

// readMeta reads the meta.json of dir; a missing one wraps
// fs.ErrNotExist.
func readMeta(dir string) (meta, error) {
	var m meta
	data, err := os.ReadFile(filepath.Join(dir, metaFileName))
	if err != nil {
		return m, err
	}
	if err := json.Unmarshal(data, &m); err != nil {
		return m, fmt.Errorf("%s is damaged: %w", filepath.Join(dir, metaFileName), err)
	}
	return m, nil
}

// Revision returns the revision of the stored tags of an ImageRepository,
// and false when none are stored.
func (s *Store) Revision(namespace, name string) (string, bool) {
	dir, err := s.repoDir(namespace, name)
	if err != nil {
		return "", false
	}
	m, err := readMeta(dir)
	if err != nil {
		return "", false
	}
	return m.Revision, true
}

// Snapshot is the stored tag list of one ImageRepository as it was when
// opened: a later scan replaces the files but not what a Snapshot reads.
// Close it when done. A Snapshot is for one goroutine.
type Snapshot struct {
	// Image is the canonical name of the scanned repository.
	Image string
	// Revision is the hash of the tags (ScanResult.Revision).
	Revision string
	// Count is how many tags there are.
	Count int

	file *os.File
	size int64
	err  error
}

// Open returns the stored tag list of an ImageRepository; the error wraps
// ErrNotFound when none is stored.
func (s *Store) Open(namespace, name string) (*Snapshot, error) {
	dir, err := s.repoDir(namespace, name)
	if err != nil {
		return nil, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	m, err := readMeta(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w: no tags are stored for %s/%s", ErrNotFound, namespace, name)
	}
	if err != nil {
		return nil, err
	}
	f, err := os.Open(filepath.Join(dir, tagsFileName))
	if err != nil {
		return nil, fmt.Errorf("opening the stored tags of %s/%s: %w", namespace, name, err)
	}
	info, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("opening the stored tags of %s/%s: %w", namespace, name, err)
	}
	return &Snapshot{Image: m.Image, Revision: m.Revision, Count: m.Count, file: f, size: info.Size()}, nil
}

// All yields the tags in stored order (bytewise ascending), read from
// disk a line at a time: memory stays the same whatever the count. It
// may be ranged over more than once; after ranging, Err says whether the
// file could be read to the end.
func (sn *Snapshot) All() iter.Seq[string] {
	return func(yield func(string) bool) {
		lines := newLineScanner(io.NewSectionReader(sn.file, 0, sn.size))
		for lines.Scan() {
			if !yield(lines.Text()) {
				return
			}
		}
		if err := lines.Err(); err != nil && sn.err == nil {
			sn.err = fmt.Errorf("reading the stored tags: %w", err)
		}
	}
}

// Err returns the first read error of All, or nil.
func (sn *Snapshot) Err() error { return sn.err }

// Close releases the file.
func (sn *Snapshot) Close() error { return sn.file.Close() }

// Each calls yield with each stored tag of an ImageRepository, in stored
// order, until yield returns false; the error wraps ErrNotFound when
// nothing is stored. Memory stays the same whatever the count.
func (s *Store) Each(namespace, name string, yield func(tag string) bool) error {
	snap, err := s.Open(namespace, name)
	if err != nil {
		return err
	}
	defer snap.Close()
	for tag := range snap.All() {
		if !yield(tag) {
			break
		}
	}
	return snap.Err()
}

// Delete removes the stored tags of an ImageRepository; nothing stored is
// no error.
func (s *Store) Delete(namespace, name string) error {
	dir, err := s.repoDir(namespace, name)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("deleting the stored tags of %s/%s: %w", namespace, name, err)
	}
	_ = os.Remove(filepath.Dir(dir)) // the namespace's folder, when it is now empty
	return nil
}

// commit stores a scanned list in dir: tmp (the new tags file, "" when
// the stored one already holds these tags) and m. It writes nothing when
// the stored files already say the same, and tells whether it wrote.
func (s *Store) commit(dir string, m meta, tmp string) (bool, error) {
	if old, err := readMeta(dir); tmp == "" && err == nil && old == m {
		return false, nil
	}
	data, err := json.Marshal(m)
	if err != nil {
		return false, err
	}
	metaTmp, err := writeTemp(dir, ".meta-*.tmp", true, func(w *bufio.Writer) error {
		_, err := w.Write(data)
		return err
	})
	if err != nil {
		return false, err
	}
	defer os.Remove(metaTmp) // a no-op once renamed
	if err := s.replace(dir, tmp, metaTmp); err != nil {
		return false, err
	}
	return true, syncDir(dir)
}

// replace renames the new tags file (when there is one) and the new meta
// file onto the stored ones, together for readers.
func (s *Store) replace(dir, tagsTmp, metaTmp string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if tagsTmp != "" {
		if err := os.Rename(tagsTmp, filepath.Join(dir, tagsFileName)); err != nil {
			return fmt.Errorf("storing the tags: %w", err)
		}
	}
	if err := os.Rename(metaTmp, filepath.Join(dir, metaFileName)); err != nil {
		return fmt.Errorf("storing the tags' revision: %w", err)
	}
	return nil
}

// writeTemp writes a new temporary file of dir with write, synced when
// sync is set, and returns its path; on error, the file is removed.
func writeTemp(dir, pattern string, sync bool, write func(*bufio.Writer) error) (string, error) {
	f, err := os.CreateTemp(dir, pattern)
	if err != nil {
		return "", err
	}
	out := bufio.NewWriter(f)
	err = write(out)
	if err == nil {
		err = out.Flush()
	}
	if err == nil && sync {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(f.Name())
		return "", err
	}
	return f.Name(), nil
}

// syncDir makes the renames in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// newLineScanner returns a scanner of the lines of r, none longer than
// maxTagLine.
func newLineScanner(r io.Reader) *bufio.Scanner {
	lines := bufio.NewScanner(r)
	lines.Buffer(make([]byte, 0, 512), maxTagLine)
	return lines
}
