package build

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"go.yaml.in/yaml/v3"
	"sigs.k8s.io/kustomize/api/konfig"
	"sigs.k8s.io/kustomize/api/types"
	sigsyaml "sigs.k8s.io/yaml"
)

// Generate returns a kustomization.yaml for the directory path (relative to
// root) when that directory has no kustomization file, keyed by the
// absolute, symlink-free path it belongs at (for Options.Files); nothing is
// written. It returns nil when the directory has a kustomization. It lists, in walk
// order (sorted by name, directory by directory), every manifest below the
// directory: files ending in .yaml, .yml or .json, in any case, with at least
// one document that has apiVersion and kind. A sub-directory with its own
// kustomization file is listed as a whole and not descended into.
//
// Files that are not Kubernetes objects are skipped; files that are not
// valid YAML are an error, so that a broken manifest is never silently left
// out (and then pruned). Symbolic links to files inside root are listed;
// links to directories are not followed; links that leave root are an error.
func Generate(root, path string) (map[string][]byte, error) {
	fsys, err := NewConfinedFS(root)
	if err != nil {
		return nil, err
	}
	dir, err := buildDir(fsys, path)
	if err != nil {
		return nil, err
	}
	if hasKustomization(dir) {
		return nil, nil
	}
	resources, err := listResources(fsys, dir)
	if err != nil {
		return nil, fmt.Errorf("generating a kustomization for %q: %w", path, err)
	}
	k := types.Kustomization{
		TypeMeta: types.TypeMeta{
			APIVersion: types.KustomizationVersion,
			Kind:       types.KustomizationKind,
		},
		Resources: resources,
	}
	data, err := sigsyaml.Marshal(k)
	if err != nil {
		return nil, fmt.Errorf("encoding the generated kustomization: %w", err)
	}
	return map[string][]byte{filepath.Join(dir, konfig.DefaultKustomizationFileName()): data}, nil
}

// hasKustomization reports whether dir holds a kustomization file (of any
// kind: even a dangling link counts, and is left to kustomize to report).
func hasKustomization(dir string) bool {
	for _, n := range konfig.RecognizedKustomizationFileNames() {
		if _, err := os.Lstat(filepath.Join(dir, n)); err == nil {
			return true
		}
	}
	return false
}

// listResources walks dir and returns the entries for the generated
// kustomization, relative to dir, with forward slashes.
func listResources(fsys *ConfinedFS, dir string) ([]string, error) {
	var out []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		include, skip, err := classify(fsys, p, d)
		if err != nil {
			return fmt.Errorf("%q: %w", fsys.rel(p), err)
		}
		if include {
			out = append(out, filepath.ToSlash(rel))
		}
		return skip
	})
	return out, err
}

// classify decides whether the walk entry p is listed, and whether the walk
// skips the directory it names.
func classify(fsys *ConfinedFS, p string, d fs.DirEntry) (include bool, skip error, err error) {
	switch {
	case d.IsDir():
		if hasKustomization(p) {
			return true, filepath.SkipDir, nil
		}
		return false, nil, nil
	case d.Type()&fs.ModeSymlink != 0:
		real, err := fsys.Resolve(p)
		if err != nil {
			return false, nil, err
		}
		if fsys.IsDir(real) {
			return false, nil, nil
		}
		if !fsys.Exists(real) {
			return false, nil, nil // a dangling link inside root
		}
		ok, err := isManifest(fsys, p)
		return ok, nil, err
	case d.Type().IsRegular():
		ok, err := isManifest(fsys, p)
		return ok, nil, err
	}
	return false, nil, nil
}

// manifestExts are the file extensions of manifests, lower-cased.
var manifestExts = map[string]bool{".yaml": true, ".yml": true, ".json": true}

// isManifest reports whether p has a manifest extension and holds at least
// one Kubernetes object.
func isManifest(fsys *ConfinedFS, p string) (bool, error) {
	if !manifestExts[strings.ToLower(filepath.Ext(p))] {
		return false, nil
	}
	data, err := fsys.ReadFile(p)
	if err != nil {
		return false, err
	}
	return hasObject(data)
}

// hasObject reports whether some YAML document in data has a string
// apiVersion and kind, and is not itself a kustomization.
func hasObject(data []byte) (bool, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	found := false
	for {
		// Into any, not a map: a document that is not a mapping is no
		// error then, and every error (a duplicate key is a TypeError) is
		// one of the YAML, not to be skipped.
		var v any
		err := dec.Decode(&v)
		if errors.Is(err, io.EOF) {
			return found, nil
		}
		if err != nil {
			return false, fmt.Errorf("not valid YAML: %s", strings.ReplaceAll(err.Error(), "\n  ", " "))
		}
		if doc, ok := v.(map[string]any); ok && isObject(doc) {
			found = true
		}
	}
}

func isObject(doc map[string]any) bool {
	apiVersion, _ := doc["apiVersion"].(string)
	kind, _ := doc["kind"].(string)
	if apiVersion == "" || kind == "" {
		return false
	}
	return !strings.HasPrefix(apiVersion, "kustomize.config.k8s.io/")
}
