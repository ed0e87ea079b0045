package sourceignore

import (
	"fmt"
	"io"
	"path"
	"strings"

	"github.com/go-git/go-git/v5/plumbing/format/gitignore"

	"github.com/windlass-dev/windlass/internal/archive"
)

// IgnoreFile is the name of the files that add exclusion rules for their
// directory and below.
const IgnoreFile = ".sourceignore"

// MaxIgnoreFileSize is the largest IgnoreFile NewFilter accepts, in bytes.
const MaxIgnoreFileSize int64 = 1 << 20

// vcsDir is the name that is always excluded.
const vcsDir = ".git"

// DefaultExcludes holds the rules, in .sourceignore format, that apply when
// an object does not set spec.ignore. They match without regard to case.
const DefaultExcludes = `# VCS
.git/
.gitignore
.gitmodules
.gitattributes
# Images and archives
*.jpg
*.jpeg
*.gif
*.png
*.wmv
*.flv
*.tar.gz
*.zip
# CI configuration
.github/
.circleci/
.travis.yml
.gitlab-ci.yml
appveyor.yml
.drone.yml
cloudbuild.yaml
codeship-services.yml
codeship-steps.yml
# Release and decryption configuration
**/.goreleaser.yml
**/.sops.yaml
**/.flux.yaml
`

// ParsePatterns parses text in .sourceignore (gitignore) format into
// patterns scoped to domain, the slash-separated elements of the directory
// the rules apply to (nil for the root). Blank lines and comments are
// skipped and Windows line endings are accepted.
func ParsePatterns(text string, domain []string) []gitignore.Pattern {
	var ps []gitignore.Pattern
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimSuffix(line, "\r")
		if strings.HasPrefix(line, "#") || strings.TrimSpace(line) == "" {
			continue
		}
		ps = append(ps, gitignore.ParsePattern(line, domain))
	}
	return ps
}

// matcher holds the rules of one source tree, by priority.
type matcher struct {
	defaults []gitignore.Pattern // matched against the lowercased path
	files    []gitignore.Pattern // from IgnoreFile files, root first
	spec     []gitignore.Pattern // from spec.ignore
}

// NewFilter returns the archive filter for the source tree under root
// (see NewTreeFilter).
func NewFilter(root string, ignore *string) (archive.Filter, error) {
	return NewTreeFilter(archive.Dir(root), ignore)
}

// NewTreeFilter returns the archive filter for the source tree.
//
// When ignore is nil, DefaultExcludes apply; otherwise the rules in *ignore
// replace them (".git" stays excluded). The IgnoreFile files of the tree are
// read in both cases; a file that is not a regular file (a symbolic link, for
// instance) is not read, and nor are files in excluded directories. An
// IgnoreFile larger than MaxIgnoreFileSize is an error.
func NewTreeFilter(tree archive.Tree, ignore *string) (archive.Filter, error) {
	m := newMatcher(ignore)
	if err := m.loadIgnoreFiles(tree, nil); err != nil {
		return nil, err
	}
	return m.match, nil
}

// NewKeyFilter returns a filter of object keys, slash-separated paths
// listed before anything is downloaded (the keys of a bucket): the rules of
// ignore, or DefaultExcludes when it is nil, without any IgnoreFile, which
// NewFilter reads once the objects are on disk.
func NewKeyFilter(ignore *string) archive.Filter {
	return newMatcher(ignore).match
}

// newMatcher returns a matcher of the rules of ignore, or of
// DefaultExcludes when it is nil.
func newMatcher(ignore *string) *matcher {
	m := &matcher{}
	if ignore == nil {
		m.defaults = ParsePatterns(DefaultExcludes, nil)
	} else {
		m.spec = ParsePatterns(*ignore, nil)
	}
	return m
}

// loadIgnoreFiles reads the IgnoreFile of the directory of tree with the
// given elements, then those of its subdirectories that are not excluded,
// parents before children.
func (m *matcher) loadIgnoreFiles(tree archive.Tree, elems []string) error {
	dir := path.Join(append([]string{"."}, elems...)...)
	entries, err := tree.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("reading directory %q: %w", dir, err)
	}
	for _, e := range entries {
		if e.Name() == IgnoreFile && e.Type().IsRegular() {
			ps, err := readIgnoreFile(tree, path.Join(dir, IgnoreFile), elems)
			if err != nil {
				return err
			}
			m.files = append(m.files, ps...)
		}
	}
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		sub := append(append([]string(nil), elems...), e.Name())
		if m.matchElems(sub, true) {
			continue
		}
		if err := m.loadIgnoreFiles(tree, sub); err != nil {
			return err
		}
	}
	return nil
}

// readIgnoreFile parses the IgnoreFile name of tree, scoped to domain.
func readIgnoreFile(tree archive.Tree, name string, domain []string) (_ []gitignore.Pattern, err error) {
	f, err := tree.Open(name)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", name, err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxIgnoreFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", name, err)
	}
	if int64(len(data)) > MaxIgnoreFileSize {
		return nil, fmt.Errorf("%s is larger than %d bytes", name, MaxIgnoreFileSize)
	}
	return ParsePatterns(string(data), domain), nil
}

// match implements archive.Filter.
func (m *matcher) match(relPath string, isDir bool) bool {
	clean := path.Clean(relPath)
	switch {
	case relPath == "" || clean == ".":
		return false
	case clean == ".." || strings.HasPrefix(clean, "../") || path.IsAbs(clean):
		return true // not part of the tree
	}
	return m.matchElems(strings.Split(clean, "/"), isDir)
}

// matchElems reports whether the path with the given elements is excluded.
func (m *matcher) matchElems(elems []string, isDir bool) bool {
	for _, e := range elems {
		if strings.EqualFold(e, vcsDir) {
			return true
		}
	}
	if r := matchLast(m.spec, elems, isDir); r != gitignore.NoMatch {
		return r == gitignore.Exclude
	}
	if r := matchLast(m.files, elems, isDir); r != gitignore.NoMatch {
		return r == gitignore.Exclude
	}
	if len(m.defaults) == 0 {
		return false
	}
	lower := make([]string, len(elems))
	for i, e := range elems {
		lower[i] = strings.ToLower(e)
	}
	return matchLast(m.defaults, lower, isDir) == gitignore.Exclude
}

// matchLast returns the result of the last pattern in ps that matches.
func matchLast(ps []gitignore.Pattern, elems []string, isDir bool) gitignore.MatchResult {
	for i := len(ps) - 1; i >= 0; i-- {
		if r := ps[i].Match(elems, isDir); r != gitignore.NoMatch {
			return r
		}
	}
	return gitignore.NoMatch
}
