package chart

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"helm.sh/helm/v4/pkg/chart/loader/archive"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/ignore"
)

// LoadDir loads the chart in the folder chartPath, relative to root (a
// source's extracted artifact), under the limits l. The folder and every file
// read must resolve inside root: a chartPath that is absolute, climbs out with
// "..", or crosses a symbolic link that leaves root is refused. Inside the
// chart, relative symbolic links that stay inside root are followed (a link
// to a folder is walked, a link to a file is loaded under the link's name);
// links leaving root, absolute, dangling or looping links refuse the chart.
// The chart's .helmignore is honoured; it too must not be a link out of root.
func LoadDir(root, chartPath string, l Limits) (*chart.Chart, error) {
	r, err := os.OpenRoot(root)
	if err != nil {
		return nil, fmt.Errorf("opening source root: %w", err)
	}
	defer r.Close()
	files, err := readDir(r, chartPath, newBudget(l))
	if err != nil {
		return nil, err
	}
	return loadFiles(files)
}

// readDir collects and checks the files of the chart folder chartPath of
// r, charging b.
func readDir(r *os.Root, chartPath string, b *budget) ([]*archive.BufferedFile, error) {
	w, err := newDirWalker(r, chartPath, b)
	if err != nil {
		return nil, err
	}
	if err := w.walk(w.dir, "", nil); err != nil {
		return nil, fmt.Errorf("reading chart folder %q: %w", chartPath, err)
	}
	if err := checkNested(w.files, w.budget, 0); err != nil {
		return nil, fmt.Errorf("reading chart folder %q: %w", chartPath, err)
	}
	return w.files, nil
}

// dirWalker collects the files of one chart folder through an os.Root.
type dirWalker struct {
	root   *os.Root
	dir    string // chart folder, relative to the root, with slashes
	rules  *ignore.Rules
	budget *budget
	files  []*archive.BufferedFile
}

// newDirWalker checks chartPath and reads the chart's .helmignore.
func newDirWalker(r *os.Root, chartPath string, b *budget) (*dirWalker, error) {
	dir, err := localPath(chartPath)
	if err != nil {
		return nil, fmt.Errorf("chart path: %w", err)
	}
	fi, err := r.Stat(dir)
	if err != nil {
		return nil, fmt.Errorf("chart folder %q inside the source root: %w", chartPath, err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("chart path %q is not a folder", chartPath)
	}
	rules, err := readIgnore(r, dir, b.limits.MaxFileSize)
	if err != nil {
		return nil, err
	}
	return &dirWalker{root: r, dir: dir, rules: rules, budget: b}, nil
}

// localPath cleans a path that must stay inside its root: relative, with no
// way up. It returns "." for the root itself.
func localPath(p string) (string, error) {
	if p == "" {
		return ".", nil
	}
	if filepath.IsAbs(p) || strings.HasPrefix(p, "/") || strings.HasPrefix(p, `\`) {
		return "", fmt.Errorf("%q is absolute; it must be relative to the source root", p)
	}
	c := path.Clean(filepath.ToSlash(p))
	if c == ".." || strings.HasPrefix(c, "../") {
		return "", fmt.Errorf("%q leads outside the source root", p)
	}
	return c, nil
}

// readIgnore reads the .helmignore of dir, if any, plus Helm's defaults.
func readIgnore(r *os.Root, dir string, maxSize int64) (*ignore.Rules, error) {
	name := path.Join(dir, ignore.HelmIgnore)
	data, err := readRootFile(r, name, maxSize)
	rules := ignore.Empty()
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return nil, fmt.Errorf("reading %s: %w", ignore.HelmIgnore, err)
	default:
		if rules, err = ignore.Parse(bytes.NewReader(data)); err != nil {
			return nil, fmt.Errorf("parsing %s: %w", ignore.HelmIgnore, err)
		}
	}
	rules.AddDefaults()
	return rules, nil
}

// readRootFile reads the regular file name of r, at most maxSize bytes.
func readRootFile(r *os.Root, name string, maxSize int64) ([]byte, error) {
	f, err := r.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%q is not a regular file", name)
	}
	if fi.Size() > maxSize {
		return nil, fmt.Errorf("%q is %d bytes, more than the limit of %d", name, fi.Size(), maxSize)
	}
	data, err := io.ReadAll(io.LimitReader(f, maxSize+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > maxSize {
		return nil, fmt.Errorf("%q grew past the limit of %d bytes", name, maxSize)
	}
	return data, nil
}

// walk collects the files of the folder rel (relative to the root); name is
// its chart-relative name ("" for the chart folder) and parents holds the
// folders above it, to detect loops through links.
func (w *dirWalker) walk(rel, name string, parents []os.FileInfo) error {
	self, err := w.root.Stat(rel)
	if err != nil {
		return err
	}
	for _, p := range parents {
		if os.SameFile(p, self) {
			return fmt.Errorf("folder %q loops back to one of its parents through a symbolic link", name)
		}
	}
	parents = append(parents, self)
	entries, err := w.readDir(rel)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if err := w.visit(path.Join(rel, e.Name()), path.Join(name, e.Name()), e, parents); err != nil {
			return err
		}
	}
	return nil
}

// readDir lists the folder rel in name order.
func (w *dirWalker) readDir(rel string) ([]fs.DirEntry, error) {
	d, err := w.root.Open(rel)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	entries, err := d.ReadDir(-1)
	if err != nil {
		return nil, fmt.Errorf("listing %q: %w", rel, err)
	}
	slices.SortFunc(entries, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	return entries, nil
}

// visit handles one folder entry: rel is relative to the root, name to the
// chart folder.
func (w *dirWalker) visit(rel, name string, e fs.DirEntry, parents []os.FileInfo) error {
	fi, err := e.Info()
	if err != nil {
		return err
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		if w.rules.Ignore(name, fi) {
			return nil
		}
		// os.Root follows the link only while it stays inside the root.
		if fi, err = w.root.Stat(rel); err != nil {
			return fmt.Errorf("symbolic link %q does not resolve inside the source root: %w", name, err)
		}
	}
	if w.rules.Ignore(name, fi) {
		return nil
	}
	if fi.IsDir() {
		return w.walk(rel, name, parents)
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("%q is not a regular file", name)
	}
	if err := w.budget.take(name, fi.Size()); err != nil {
		return err
	}
	data, err := readRootFile(w.root, rel, w.budget.limits.MaxFileSize)
	if err != nil {
		return fmt.Errorf("reading %q: %w", name, err)
	}
	w.files = append(w.files, &archive.BufferedFile{
		Name:    name,
		ModTime: fi.ModTime(),
		Data:    bytes.TrimPrefix(data, utf8BOM),
	})
	return nil
}
