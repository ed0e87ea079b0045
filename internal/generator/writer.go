package generator

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"

	"helm.sh/helm/v4/pkg/chart/v2/loader"
	"sigs.k8s.io/yaml"

	"github.com/windlass-dev/windlass/internal/archive"
)

// writer writes the files of one artifact under root, within a budget of
// bytes.
type writer struct {
	root      string
	remaining int64
}

// local returns the path on disk of rel in the artifact's tree.
func (w *writer) local(rel []string) string {
	return filepath.Join(w.root, filepath.FromSlash(path.Join(rel...)))
}

// isDir reports whether rel is a folder of the artifact.
func (w *writer) isDir(rel []string) bool {
	fi, err := os.Lstat(w.local(rel))
	return err == nil && fi.IsDir()
}

// isFile reports whether rel is a file of the artifact.
func (w *writer) isFile(rel []string) bool {
	fi, err := os.Lstat(w.local(rel))
	return err == nil && fi.Mode().IsRegular()
}

// create opens rel for writing, creating its folders; a folder in the way
// is an error.
func (w *writer) create(rel []string, executable bool) (*os.File, error) {
	if len(rel) == 0 {
		return nil, errors.New("a file cannot be written at the artifact's root: end the destination with '/'")
	}
	if w.isDir(rel) {
		return nil, fmt.Errorf("'%s' is a folder of the artifact, not a file", path.Join(rel...))
	}
	p := w.local(rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return nil, fmt.Errorf("'%s' cannot be written: a file of the artifact is where a folder must be", path.Join(rel...))
	}
	mode := os.FileMode(0o644)
	if executable {
		mode = 0o755
	}
	return os.OpenFile(p, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, mode)
}

// copy copies the regular file src to rel.
func (w *writer) copy(src string, rel []string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	fi, err := in.Stat()
	if err != nil {
		return err
	}
	out, err := w.create(rel, fi.Mode()&0o111 != 0)
	if err != nil {
		return err
	}
	n, err := copyLimited(out, in, w.remaining)
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	w.remaining -= n
	return err
}

// merge merges the YAML file src into the file rel, as Helm merges values
// files: maps key by key, recursively; any other value of src replaces the
// one of rel. Each file's documents are merged first, in order.
func (w *writer) merge(src string, rel []string) error {
	base, err := readValues(w.local(rel), w.remaining)
	if err != nil {
		return fmt.Errorf("merging into '%s': %w", path.Join(rel...), err)
	}
	overlay, err := readValues(src, w.remaining)
	if err != nil {
		return fmt.Errorf("merging '%s': %w", filepath.Base(src), err)
	}
	data, err := yaml.Marshal(loader.MergeMaps(base, overlay))
	if err != nil {
		return err
	}
	out, err := w.create(rel, false)
	if err != nil {
		return err
	}
	n, err := copyLimited(out, bytes.NewReader(data), w.remaining)
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	w.remaining -= n
	return err
}

// readValues reads the YAML values of the file at p, at most limit bytes.
func readValues(p string, limit int64) (map[string]any, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var buf bytes.Buffer
	if _, err := copyLimited(&buf, f, limit); err != nil {
		return nil, err
	}
	values, err := loader.LoadValues(&buf)
	if err != nil {
		return nil, fmt.Errorf("not YAML values: %w", err)
	}
	return values, nil
}

// extract unpacks the tarball at src into the folder rel, within the
// budget: archive.Extract refuses links, special files and names that leave
// the folder.
func (w *writer) extract(src string, rel []string) error {
	size, err := unpackedSize(src, w.remaining)
	if err != nil {
		return fmt.Errorf("extracting '%s': %w", filepath.Base(src), err)
	}
	f, err := os.Open(src)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := archive.Extract(f, w.local(rel), archive.WithMaxSize(w.remaining)); err != nil {
		return fmt.Errorf("extracting '%s': %w", filepath.Base(src), err)
	}
	w.remaining -= size
	return nil
}

// unpackedSize returns the size of the tarball at p once decompressed, tar
// headers included; more than limit is ErrTooLarge.
func unpackedSize(p string, limit int64) (int64, error) {
	f, err := os.Open(p)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		return 0, fmt.Errorf("not a gzip tarball: %w", err)
	}
	defer gz.Close()
	return copyLimited(io.Discard, gz, limit)
}
