package imageupdate

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	securejoin "github.com/cyphar/filepath-securejoin"
)

// MaxFileSize is the largest file ApplySetters reads; a larger one is skipped
// and named in Result.Skipped.
const MaxFileSize = 5 << 20

// ApplySetters rewrites, in the YAML files under root/path, every value
// marked with a setter marker whose policy is in refs, and returns what it
// changed. Markers naming a policy not in refs are left alone: the policy is
// not selected by the automation. To update one policy only (a branch per
// policy), call it with a refs map holding that one policy.
//
// It reads every file first and writes nothing when any marker cannot be
// applied: it then returns a *MalformedMarkersError naming all of them. A
// file is written only when its bytes change, atomically, keeping its mode.
// An error while writing can leave the files before it written.
func ApplySetters(root, path string, refs map[PolicyKey]ImageRef) (*Result, error) {
	start, err := resolveUpdatePath(root, path)
	if err != nil {
		return nil, err
	}
	files, skipped, err := listYAMLFiles(root, start)
	if err != nil {
		return nil, err
	}
	var writes []pendingWrite
	var changes []located
	var malformed []*MarkerError
	for _, f := range files {
		data, perm, err := readYAMLFile(f.abs)
		if errors.Is(err, errTooLarge) {
			skipped = append(skipped, SkippedFile{File: f.rel, Reason: err.Error()})
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", f.rel, err)
		}
		plan := planFile(f.rel, data, refs)
		malformed = append(malformed, plan.errs...)
		if updated := applyEdits(data, plan.edits); !bytes.Equal(updated, data) {
			writes = append(writes, pendingWrite{yamlFile: f, data: updated, perm: perm})
			changes = append(changes, plan.changes...)
		}
	}
	if len(malformed) > 0 {
		return nil, &MalformedMarkersError{Markers: malformed}
	}
	for _, w := range writes {
		if err := writeAtomic(w.abs, w.data, w.perm); err != nil {
			return nil, fmt.Errorf("writing %s: %w", w.rel, err)
		}
	}
	return newResult(changes, skipped), nil
}

// yamlFile is a file to read: its path and its name relative to the root.
type yamlFile struct {
	abs string
	rel string // slash-separated
}

// pendingWrite is a file's new content, written once every file is checked.
type pendingWrite struct {
	yamlFile
	data []byte
	perm fs.FileMode
}

// resolveUpdatePath returns root/path after checking that path is relative,
// stays inside root, exists, and goes through no symbolic link.
func resolveUpdatePath(root, path string) (string, error) {
	if filepath.IsAbs(path) || strings.HasPrefix(path, "/") {
		return "", fmt.Errorf("update path %q must be relative to the repository root", path)
	}
	clean := filepath.Clean(filepath.FromSlash(path))
	if clean == ".." || strings.HasPrefix(clean, ".."+string(filepath.Separator)) {
		return "", fmt.Errorf("update path %q leaves the repository root", path)
	}
	joined := filepath.Join(root, clean)
	secured, err := securejoin.SecureJoin(root, clean)
	if err != nil {
		return "", fmt.Errorf("resolving update path %q: %w", path, err)
	}
	if secured != joined {
		return "", fmt.Errorf("update path %q goes through a symbolic link", path)
	}
	if _, err := os.Lstat(joined); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return "", fmt.Errorf("update path %q does not exist in the repository", path)
		}
		return "", fmt.Errorf("update path %q: %w", path, err)
	}
	return joined, nil
}

// listYAMLFiles walks start, without following symbolic links, and returns
// its *.yaml and *.yml files (any case), leaving out .git. Symbolic links are
// named in the skipped list.
func listYAMLFiles(root, start string) (files []yamlFile, skipped []SkippedFile, err error) {
	err = filepath.WalkDir(start, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		switch {
		case d.Name() == ".git" && p != root:
			if d.IsDir() {
				return filepath.SkipDir
			}
		case d.Type()&fs.ModeSymlink != 0:
			skipped = append(skipped, SkippedFile{File: rel, Reason: "symbolic link, not followed"})
		case d.Type().IsRegular() && isYAMLName(d.Name()):
			files = append(files, yamlFile{abs: p, rel: rel})
		}
		return nil
	})
	if err != nil {
		return nil, nil, fmt.Errorf("listing the files to update: %w", err)
	}
	return files, skipped, nil
}

// isYAMLName tells whether a file name ends in .yaml or .yml, in any case.
func isYAMLName(name string) bool {
	ext := strings.ToLower(filepath.Ext(name))
	return ext == ".yaml" || ext == ".yml"
}

// errTooLarge marks a file over MaxFileSize.
var errTooLarge = fmt.Errorf("larger than %d MiB, not read", MaxFileSize>>20)

// readYAMLFile reads a regular file without following a symbolic link, up to
// MaxFileSize, and returns its content and permissions.
func readYAMLFile(abs string) ([]byte, fs.FileMode, error) {
	f, err := os.OpenFile(abs, os.O_RDONLY|openFlags, 0)
	if err != nil {
		return nil, 0, err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, 0, err
	}
	if !info.Mode().IsRegular() {
		return nil, 0, errors.New("not a regular file")
	}
	if info.Size() > MaxFileSize {
		return nil, 0, errTooLarge
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		return nil, 0, err
	}
	if len(data) > MaxFileSize {
		return nil, 0, errTooLarge
	}
	return data, info.Mode().Perm(), nil
}

// writeAtomic replaces the file at abs with data: it writes a temporary file
// in the same directory, gives it perm, syncs it and renames it over abs. A
// rename replaces a symbolic link itself, never what it points to.
func writeAtomic(abs string, data []byte, perm fs.FileMode) (err error) {
	dir, base := filepath.Split(abs)
	tmp, err := os.CreateTemp(dir, "."+base+".tmp-*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			_ = tmp.Close()
			_ = os.Remove(tmp.Name())
		}
	}()
	if _, err = tmp.Write(data); err != nil {
		return err
	}
	if err = tmp.Chmod(perm); err != nil {
		return err
	}
	if err = tmp.Sync(); err != nil {
		return err
	}
	if err = tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), abs)
}
