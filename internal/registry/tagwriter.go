package registry

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// tagList is a scanned list of tags ready to be stored.
type tagList struct {
	// path is the new tags file, "" when the stored one already holds
	// exactly these tags.
	path     string
	revision string
	count    int
	latest   []string
}

// discard removes the new tags file if it was not stored.
func (l tagList) discard() {
	if l.path != "" {
		_ = os.Remove(l.path)
	}
}

// tagWriter takes the tags of a scan in byte order, skipping repeats. It
// hashes them, keeps the greatest ones, and compares them with the stored
// tags file line by line: it starts a temporary file (with the lines that
// matched so far) only at the first difference, so that an unchanged list
// writes nothing.
type tagWriter struct {
	dir string
	// stored is the stored tags file, nil when there is none;
	// storedLines reads it and sameLines counts its lines matched so far.
	stored      *os.File
	storedLines *bufio.Scanner
	sameLines   int
	// tmp is the new file, out its buffer; nil until the first
	// difference.
	tmp *os.File
	out *bufio.Writer

	hash   hash.Hash
	prev   string
	count  int
	latest [maxLatestTags]string // a ring of the last tags added
}

// newTagWriter returns a tagWriter that compares with the tags file of
// dir.
func newTagWriter(dir string) (*tagWriter, error) {
	w := &tagWriter{dir: dir, hash: sha256.New()}
	f, err := os.Open(filepath.Join(dir, tagsFileName))
	switch {
	case err == nil:
		w.stored, w.storedLines = f, newLineScanner(f)
	case !errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("reading the stored tags: %w", err)
	}
	return w, nil
}

// add takes the next tag.
func (w *tagWriter) add(tag string) error {
	if w.count > 0 && tag == w.prev {
		return nil
	}
	w.prev = tag
	w.latest[w.count%maxLatestTags] = tag
	w.count++
	_, _ = io.WriteString(w.hash, tag+"\n")
	if w.out == nil {
		if w.storedLines != nil && w.storedLines.Scan() && w.storedLines.Text() == tag {
			w.sameLines++
			return nil
		}
		if err := w.diverge(); err != nil {
			return err
		}
	}
	_, err := w.out.WriteString(tag + "\n")
	return err
}

// diverge starts the temporary file, with the stored lines matched so
// far; it does nothing when it is started already.
func (w *tagWriter) diverge() error {
	if w.out != nil {
		return nil
	}
	tmp, err := os.CreateTemp(w.dir, ".tags-*.tmp")
	if err != nil {
		return fmt.Errorf("storing the tags: %w", err)
	}
	w.tmp, w.out = tmp, bufio.NewWriter(tmp)
	if w.sameLines == 0 {
		return nil
	}
	prefix := newLineScanner(io.NewSectionReader(w.stored, 0, 1<<62))
	for i := 0; i < w.sameLines && prefix.Scan(); i++ {
		if _, err := w.out.WriteString(prefix.Text() + "\n"); err != nil {
			return fmt.Errorf("storing the tags: %w", err)
		}
	}
	return prefix.Err()
}

// storedHasMore tells whether the stored file holds more than the lines
// matched (or cannot be read to the end).
func (w *tagWriter) storedHasMore() bool {
	return w.storedLines == nil || w.storedLines.Scan() || w.storedLines.Err() != nil
}

// finish completes the list: when the tags differ from the stored ones,
// the temporary file is flushed and synced, ready to be renamed.
func (w *tagWriter) finish() (tagList, error) {
	if w.out == nil && w.storedHasMore() {
		if err := w.diverge(); err != nil {
			return tagList{}, err
		}
	}
	list := tagList{revision: "sha256:" + hex.EncodeToString(w.hash.Sum(nil)), count: w.count, latest: w.latestTags()}
	if w.out != nil {
		if err := w.closeTemp(); err != nil {
			return tagList{}, err
		}
		list.path, w.tmp = w.tmp.Name(), nil
	}
	return list, nil
}

// closeTemp flushes, syncs and closes the temporary file.
func (w *tagWriter) closeTemp() error {
	err := w.out.Flush()
	if err == nil {
		err = w.tmp.Sync()
	}
	if cerr := w.tmp.Close(); err == nil {
		err = cerr
	}
	w.out = nil
	if err != nil {
		return fmt.Errorf("storing the tags: %w", err)
	}
	return nil
}

// sorted returns a new tagWriter fed with the tags written so far, which
// came out of order, sorted on disk; w is discarded.
func (w *tagWriter) sorted() (*tagWriter, error) {
	defer w.discard()
	if err := w.closeTemp(); err != nil {
		return nil, err
	}
	next, err := newTagWriter(w.dir)
	if err != nil {
		return nil, err
	}
	if err := sortLines(w.dir, w.tmp.Name(), next.add); err != nil {
		next.discard()
		return nil, fmt.Errorf("sorting the tags: %w", err)
	}
	return next, nil
}

// latestTags returns the greatest tags added, greatest first.
func (w *tagWriter) latestTags() []string {
	n := min(w.count, maxLatestTags)
	latest := make([]string, n)
	for i := range n {
		latest[i] = w.latest[(w.count-1-i)%maxLatestTags]
	}
	return latest
}

// discard closes the files and removes the temporary one, unless finish
// handed it over.
func (w *tagWriter) discard() {
	if w.stored != nil {
		w.stored.Close()
		w.stored = nil
	}
	if w.tmp != nil {
		w.tmp.Close()
		os.Remove(w.tmp.Name())
		w.tmp = nil
	}
}
