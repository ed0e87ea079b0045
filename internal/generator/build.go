package generator

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/windlass-dev/windlass/internal/archive"
)

// ErrTooLarge is returned, wrapped, when an artifact's files exceed the
// size bound.
var ErrTooLarge = errors.New("the artifact's files exceed the size bound")

// Builder copies files from the trees of sources into an artifact's tree.
type Builder struct {
	// Sources maps each alias to the folder of its source's tree.
	Sources map[string]string
	// MaxSize bounds the bytes one artifact's files may hold; zero means
	// archive.DefaultMaxSize, what a consumer unpacks at most.
	MaxSize int64
}

// Build runs rules, in order, into out, the artifact's folder: a later rule
// writes over the files of an earlier one, and folders merge. An error says
// which rule failed and why; out is then incomplete.
func (b *Builder) Build(rules []Rule, out string) error {
	limit := b.MaxSize
	if limit <= 0 {
		limit = archive.DefaultMaxSize
	}
	w := &writer{root: out, remaining: limit}
	for i, r := range rules {
		if err := b.apply(w, r); err != nil {
			return fmt.Errorf("copy[%d] from '%s': %w", i, r.From, err)
		}
	}
	return nil
}

// apply runs one rule.
func (b *Builder) apply(w *writer, r Rule) error {
	src, err := parseFrom(r.From)
	if err != nil {
		return err
	}
	dst, err := parseTo(r.To)
	if err != nil {
		return err
	}
	ex, err := parseExclusions(r.Exclude)
	if err != nil {
		return err
	}
	root, ok := b.Sources[src.alias]
	if !ok {
		return fmt.Errorf("source alias '%s' not found", src.alias)
	}
	strategy := r.Strategy
	if strategy == "" {
		strategy = Overwrite
	}
	if !slices.Contains([]string{Overwrite, Merge, Extract}, strategy) {
		return fmt.Errorf("unknown strategy '%s'", strategy)
	}
	op := operation{w: w, root: root, src: src, dst: dst, ex: ex, strategy: strategy}
	if src.glob() {
		return op.copyMatches()
	}
	return op.copyPath()
}

// operation is one rule being applied.
type operation struct {
	w        *writer
	root     string
	src      from
	dst      to
	ex       exclusions
	strategy string
}

// file is a regular file of a source's tree.
type file struct {
	// fromRoot is its path from the tree's root; fromPrefix from the
	// rule's prefix, where its destination is taken from.
	fromRoot, fromPrefix []string
}

// copyPath copies the file or folder From names.
func (op operation) copyPath() error {
	rel := op.src.segments
	fi, err := os.Lstat(op.local(rel))
	switch {
	case errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR):
		return fmt.Errorf("'%s' does not exist in source '%s'", path.Join(rel...), op.src.alias)
	case err != nil:
		return err
	case fi.IsDir():
		if op.strategy == Extract {
			return errors.New("the Extract strategy takes tarballs, not folders")
		}
		files, err := op.walk(rel)
		if err != nil {
			return err
		}
		base := op.dst.segments
		if len(rel) > 0 {
			// A folder is copied as a folder of the destination; the root's
			// files go into the destination itself.
			base = append(slices.Clone(base), rel[len(rel)-1])
			for i := range files {
				files[i].fromPrefix = files[i].fromRoot[len(rel):]
			}
		}
		return op.copyFiles(op.included(files), base)
	case !fi.Mode().IsRegular():
		return fmt.Errorf("'%s' in source '%s' is not a regular file", path.Join(rel...), op.src.alias)
	}
	if op.ex.excludes(rel, rel[len(rel)-1:]) {
		return nil
	}
	if op.strategy == Extract {
		if !isTarball(rel[len(rel)-1]) {
			return fmt.Errorf("'%s' is not a tarball (.tar.gz, .tgz)", path.Join(rel...))
		}
		return op.w.extract(op.local(rel), op.dst.segments)
	}
	target := op.dst.segments
	if op.dst.dir || op.w.isDir(target) {
		target = append(slices.Clone(target), rel[len(rel)-1])
	}
	return op.copyFile(rel, target)
}

// copyMatches copies the files and folders the glob From matches, each to
// its path from the rule's prefix under the destination folder.
func (op operation) copyMatches() error {
	prefix := op.src.prefix()
	all, err := op.walkMatching(prefix)
	if err != nil {
		return err
	}
	if len(all) == 0 {
		return fmt.Errorf("no files match pattern '%s' in source '%s'", path.Join(op.src.segments...), op.src.alias)
	}
	files := op.included(all)
	if len(files) == 0 {
		return fmt.Errorf("every file matching pattern '%s' in source '%s' is excluded", path.Join(op.src.segments...), op.src.alias)
	}
	if op.strategy == Extract {
		for _, f := range files {
			if !isTarball(f.fromRoot[len(f.fromRoot)-1]) {
				continue // other files are skipped
			}
			if err := op.w.extract(op.local(f.fromRoot), op.dst.segments); err != nil {
				return err
			}
		}
		return nil
	}
	return op.copyFiles(files, op.dst.segments)
}

// included returns the files the rule's exclusions leave.
func (op operation) included(files []file) []file {
	var out []file
	for _, f := range files {
		if !op.ex.excludes(f.fromRoot, f.fromPrefix) {
			out = append(out, f)
		}
	}
	return out
}

// copyFiles copies files under the folder base, each at its fromPrefix.
func (op operation) copyFiles(files []file, base []string) error {
	for _, f := range files {
		if err := op.copyFile(f.fromRoot, append(slices.Clone(base), f.fromPrefix...)); err != nil {
			return err
		}
	}
	return nil
}

// copyFile copies the source file rel to target, or merges it there.
func (op operation) copyFile(rel, target []string) error {
	if op.strategy == Merge && op.w.isFile(target) {
		return op.w.merge(op.local(rel), target)
	}
	return op.w.copy(op.local(rel), target)
}

// local returns the path on disk of rel in the source's tree.
func (op operation) local(rel []string) string {
	return filepath.Join(op.root, filepath.FromSlash(path.Join(rel...)))
}

// walk returns the regular files under the folder rel, sorted by path; a
// symbolic link or special file is never followed nor copied.
func (op operation) walk(rel []string) ([]file, error) {
	var files []file
	err := filepath.WalkDir(op.local(rel), func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.Type().IsRegular() {
			return nil
		}
		r, err := filepath.Rel(op.root, p)
		if err != nil {
			return err
		}
		segments := strings.Split(filepath.ToSlash(r), "/")
		files = append(files, file{fromRoot: segments, fromPrefix: segments})
		return nil
	})
	return files, err
}

// walkMatching returns the regular files under the folder prefix that the
// glob matches, or that are in a folder it matches, each with its path from
// prefix, sorted.
func (op operation) walkMatching(prefix []string) ([]file, error) {
	start := op.local(prefix)
	if fi, err := os.Lstat(start); err != nil || !fi.IsDir() {
		return nil, nil
	}
	under, err := op.walk(prefix)
	if err != nil {
		return nil, err
	}
	var out []file
	for _, f := range under {
		if op.matchesFileOrParent(f.fromRoot) {
			out = append(out, file{fromRoot: f.fromRoot, fromPrefix: f.fromRoot[len(prefix):]})
		}
	}
	return out, nil
}

// matchesFileOrParent reports whether the rule's glob matches the file at
// p or a folder on its path.
func (op operation) matchesFileOrParent(p []string) bool {
	return matchesPathOrParent(op.src.segments, p)
}

// isTarball reports whether name ends with .tar.gz or .tgz, in any case.
func isTarball(name string) bool {
	lower := strings.ToLower(name)
	return strings.HasSuffix(lower, ".tar.gz") || strings.HasSuffix(lower, ".tgz")
}

// copyLimited copies at most limit bytes of r to w; more is ErrTooLarge.
func copyLimited(w io.Writer, r io.Reader, limit int64) (int64, error) {
	n, err := io.Copy(w, io.LimitReader(r, limit+1))
	if err == nil && n > limit {
		err = ErrTooLarge
	}
	return n, err
}
