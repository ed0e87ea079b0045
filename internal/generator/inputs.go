package generator

import (
	"os"
	"path"
	"path/filepath"
)

// Input is what one copy rule may read: the tree of the source Alias, from
// the folder Folder down ("" for the tree's root).
type Input struct {
	Alias  string
	Folder string
}

// Inputs returns what each of rules may read, given the extracted trees of
// the sources by alias (to tell a folder from a file): the folder a path
// names, the parent folder of a file, the folder before a glob's first
// wildcard. Nothing outside those folders changes what the rules copy.
func Inputs(rules []Rule, trees map[string]string) ([]Input, error) {
	out := make([]Input, 0, len(rules))
	for _, r := range rules {
		f, err := parseFrom(r.From)
		if err != nil {
			return nil, err
		}
		segments := f.prefix()
		if !f.glob() && len(segments) > 0 && !isFolder(trees[f.alias], segments) {
			segments = segments[:len(segments)-1]
		}
		out = append(out, Input{Alias: f.alias, Folder: path.Join(segments...)})
	}
	return out, nil
}

// isFolder reports whether segments name a folder (not a link) in the tree
// at root.
func isFolder(root string, segments []string) bool {
	if root == "" {
		return false
	}
	info, err := os.Lstat(filepath.Join(root, filepath.FromSlash(path.Join(segments...))))
	return err == nil && info.IsDir()
}
