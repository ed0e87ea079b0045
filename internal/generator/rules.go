// Package generator builds the trees of an ArtifactGenerator's artifacts:
// it copies files from the trees of the generator's sources into the tree
// of each artifact by the copy rules of the source.extensions.fluxcd.io API
// (from "@alias/glob", to "@artifact/path", exclusions, and the Overwrite,
// Merge and Extract strategies). Every read stays inside a source's tree,
// every write inside the artifact's, symbolic links are never followed, and
// the bytes written to one artifact are bounded.
package generator

import (
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"
)

// The strategies of a copy rule.
const (
	// Overwrite copies files over what earlier rules wrote (the default).
	Overwrite = "Overwrite"
	// Merge merges a YAML file into the one an earlier rule wrote, as Helm
	// merges values files: maps key by key, any other value replaced.
	Merge = "Merge"
	// Extract unpacks tarballs (.tar.gz, .tgz) into the destination.
	Extract = "Extract"
)

// artifactAlias is the alias of the artifact's own tree in Rule.To.
const artifactAlias = "@artifact"

// Rule is one copy operation of an artifact.
type Rule struct {
	// From is "@alias/path": a file, a folder or a glob pattern (*, ?,
	// [...] within a name, ** across folders) in the source's tree.
	From string
	// To is "@artifact/path": a file, or a folder when it ends with "/".
	To string
	// Exclude are glob patterns of files and folders From matches that are
	// not copied; a pattern without a "/" matches a name at any depth.
	Exclude []string
	// Strategy is Overwrite (the default, when empty), Merge or Extract.
	Strategy string
}

// from is a parsed Rule.From.
type from struct {
	alias string
	// segments of the cleaned path; none for the source's root.
	segments []string
}

// glob reports whether the path holds a wildcard.
func (f from) glob() bool {
	return slices.ContainsFunc(f.segments, hasWildcard)
}

// prefix returns the segments before the first one with a wildcard.
func (f from) prefix() []string {
	i := slices.IndexFunc(f.segments, hasWildcard)
	if i < 0 {
		return f.segments
	}
	return f.segments[:i]
}

func hasWildcard(s string) bool {
	return strings.ContainsAny(s, "*?[")
}

// errOutside is returned, wrapped, for a path that leaves its tree.
var errOutside = errors.New("must be a relative path that stays inside its tree")

// parseFrom parses "@alias/path".
func parseFrom(s string) (from, error) {
	rest, ok := strings.CutPrefix(s, "@")
	alias, p, found := strings.Cut(rest, "/")
	if !ok || !found || alias == "" {
		return from{}, fmt.Errorf("from '%s' must be @<alias>/<path>", s)
	}
	segments, err := splitLocal(p)
	if err != nil {
		return from{}, fmt.Errorf("from '%s': %w", s, err)
	}
	for _, seg := range segments {
		if _, err := path.Match(seg, ""); err != nil {
			return from{}, fmt.Errorf("from '%s': invalid glob pattern '%s'", s, seg)
		}
	}
	return from{alias: alias, segments: segments}, nil
}

// to is a parsed Rule.To.
type to struct {
	// segments of the cleaned path; none for the artifact's root.
	segments []string
	// dir is set when the path names a folder: it ends with "/", or it is
	// the root.
	dir bool
}

// parseTo parses "@artifact/path".
func parseTo(s string) (to, error) {
	p, ok := strings.CutPrefix(s, artifactAlias+"/")
	if !ok {
		return to{}, fmt.Errorf("to '%s' must be %s/<path>", s, artifactAlias)
	}
	segments, err := splitLocal(p)
	if err != nil {
		return to{}, fmt.Errorf("to '%s': %w", s, err)
	}
	return to{segments: segments, dir: len(segments) == 0 || strings.HasSuffix(p, "/")}, nil
}

// splitLocal cleans p, a slash-separated path relative to a tree's root,
// and returns its segments; it refuses absolute paths, backslashes and
// paths that climb out of the root.
func splitLocal(p string) ([]string, error) {
	if strings.HasPrefix(p, "/") || strings.ContainsAny(p, "\\\x00") {
		return nil, fmt.Errorf("path '%s' %w", p, errOutside)
	}
	for _, seg := range strings.Split(p, "/") {
		if seg == ".." {
			return nil, fmt.Errorf("path '%s' %w", p, errOutside)
		}
	}
	clean := path.Clean(p)
	if clean == "." {
		return nil, nil
	}
	return strings.Split(clean, "/"), nil
}

// match reports whether the segments of a path match those of a pattern,
// where "**" matches any number of segments, none included, and other
// segments match as path.Match does.
func match(pattern, name []string) bool {
	for len(pattern) > 0 {
		if pattern[0] == "**" {
			for i := 0; i <= len(name); i++ {
				if match(pattern[1:], name[i:]) {
					return true
				}
			}
			return false
		}
		if len(name) == 0 {
			return false
		}
		if ok, err := path.Match(pattern[0], name[0]); err != nil || !ok {
			return false
		}
		pattern, name = pattern[1:], name[1:]
	}
	return len(name) == 0
}

// exclusions are the parsed Exclude patterns of a rule.
type exclusions [][]string

// parseExclusions checks and splits patterns.
func parseExclusions(patterns []string) (exclusions, error) {
	out := make(exclusions, 0, len(patterns))
	for _, p := range patterns {
		segments := strings.Split(strings.Trim(p, "/"), "/")
		for _, seg := range segments {
			if _, err := path.Match(seg, ""); err != nil || seg == "" {
				return nil, fmt.Errorf("invalid exclude pattern '%s'", p)
			}
		}
		out = append(out, segments)
	}
	return out, nil
}

// excludes reports whether a file or folder is excluded, given its path
// relative to the source's root and relative to the rule's prefix (the
// folders of From before its first wildcard). A pattern of one name
// matches any folder or file name on the path; a longer one matches the
// path from either root, or a folder on it.
func (ex exclusions) excludes(fromRoot, fromPrefix []string) bool {
	for _, pattern := range ex {
		if len(pattern) == 1 && pattern[0] != "**" {
			if slices.ContainsFunc(fromRoot, func(name string) bool { return match(pattern, []string{name}) }) {
				return true
			}
			continue
		}
		if matchesPathOrParent(pattern, fromRoot) || matchesPathOrParent(pattern, fromPrefix) {
			return true
		}
	}
	return false
}

// matchesPathOrParent reports whether pattern matches p or one of the
// folders on it.
func matchesPathOrParent(pattern, p []string) bool {
	for i := 1; i <= len(p); i++ {
		if match(pattern, p[:i]) {
			return true
		}
	}
	return false
}
