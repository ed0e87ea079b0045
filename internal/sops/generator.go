package sops

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	securejoin "github.com/cyphar/filepath-securejoin"
	"sigs.k8s.io/yaml"
)

// MaxEncryptedFileSize is the largest file, in bytes, that is read for
// decryption (5 MiB). A Secret cannot hold more than 1 MiB anyway.
const MaxEncryptedFileSize int64 = 5 << 20

var (
	// ErrFileTooLarge is wrapped by the error returned for a file larger than
	// [MaxEncryptedFileSize].
	ErrFileTooLarge = errors.New("file is too large to decrypt")
	// ErrIrregularFile is wrapped by the error returned for anything that is
	// not a regular file: a directory, symlink, device, FIFO or socket.
	ErrIrregularFile = errors.New("not a regular file")
	// ErrPathEscapesRoot is wrapped by the error returned for a reference
	// that is absolute, or that leaves the source root through `..` or a
	// symlink.
	ErrPathEscapesRoot = errors.New("path escapes the source root")
)

// kustomizationFileNames are the names kustomize looks for in a directory.
var kustomizationFileNames = []string{"kustomization.yaml", "kustomization.yml", "Kustomization"}

// kustomization holds the fields of a kustomization file that lead to files
// to decrypt or to other kustomizations.
type kustomization struct {
	Resources       []string          `json:"resources"`
	Bases           []string          `json:"bases"`
	Components      []string          `json:"components"`
	SecretGenerator []secretGenerator `json:"secretGenerator"`
}

type secretGenerator struct {
	Files []string `json:"files"`
	Envs  []string `json:"envs"`
	Env   string   `json:"env"`
}

// DecryptKustomizeSources decrypts the SOPS-encrypted files that
// `secretGenerator` entries reference, starting at the kustomization in dir
// and following its local `resources`, `bases` and `components` directories,
// and returns their plaintext by absolute, symlink-free path, for the build
// to read in their place (kustomize.Options.Files). Nothing is written: the
// source may be shared. generated holds in-memory kustomization files by the
// same kind of path (a kustomization generated for a directory without one),
// which are followed as if they were on disk.
//
// root is the top of that copy and bounds every path: dir, which is relative
// to root or absolute inside it, and every reference, which is relative to its
// kustomization file. An absolute reference, or one that leaves root through
// `..` or a symlink, is an error wrapping [ErrPathEscapesRoot]. Files under
// `files:` are decrypted in the format of their extension ([FormatForPath]),
// files under `envs:` and `env:` as dotenv. Files without SOPS markers are left
// alone, as are references that do not exist (kustomize reports those) and
// remote resources. A referenced file that is not regular or is larger than
// [MaxEncryptedFileSize] is an error, as is any failed decryption, including a
// MAC mismatch. Directories outside the kustomization graph are not visited,
// so files meant for other keys do not fail the build.
func (d *Decryptor) DecryptKustomizeSources(root, dir string, generated map[string][]byte) (map[string][]byte, error) {
	realRoot, err := filepath.EvalSymlinks(root)
	if err != nil {
		return nil, fmt.Errorf("cannot resolve source root: %w", err)
	}
	if realRoot, err = filepath.Abs(realRoot); err != nil {
		return nil, fmt.Errorf("cannot resolve source root: %w", err)
	}
	rel := dir
	if filepath.IsAbs(dir) {
		if rel, err = relInside(root, dir); err != nil {
			if rel, err = relInside(realRoot, dir); err != nil {
				return nil, fmt.Errorf("kustomization directory %q: %w", dir, err)
			}
		}
	}
	start, err := confine(realRoot, realRoot, rel)
	if err != nil {
		return nil, fmt.Errorf("kustomization directory %q: %w", dir, err)
	}
	w := &sourceWalker{d: d, root: realRoot, generated: generated,
		visited: map[string]bool{}, done: map[string]bool{}, out: map[string][]byte{}}
	if err := w.visit(start); err != nil {
		return nil, err
	}
	return w.out, nil
}

type sourceWalker struct {
	d         *Decryptor
	root      string
	generated map[string][]byte
	visited   map[string]bool
	done      map[string]bool
	out       map[string][]byte
}

func (w *sourceWalker) visit(dir string) error {
	if w.visited[dir] {
		return nil
	}
	w.visited[dir] = true

	kfile, data, err := w.readKustomization(dir)
	if err != nil || kfile == "" {
		return err
	}
	var k kustomization
	if err := yaml.Unmarshal(data, &k); err != nil {
		return fmt.Errorf("%s: %w", w.display(kfile), err)
	}

	for _, gen := range k.SecretGenerator {
		for _, entry := range gen.Files {
			// "[key=]path": kustomize splits at the first '='.
			path := entry
			if i := strings.Index(entry, "="); i >= 0 {
				path = entry[i+1:]
			}
			if err := w.decryptRef(kfile, dir, path, FormatForPath(path)); err != nil {
				return err
			}
		}
		envs := gen.Envs
		if gen.Env != "" {
			envs = append(envs, gen.Env)
		}
		for _, path := range envs {
			if err := w.decryptRef(kfile, dir, path, FormatDotenv); err != nil {
				return err
			}
		}
	}

	for _, group := range [][]string{k.Resources, k.Bases, k.Components} {
		for _, ref := range group {
			if isRemote(ref) {
				continue
			}
			target, err := confine(w.root, dir, ref)
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			if err != nil {
				return fmt.Errorf("%s: resource %q: %w", w.display(kfile), ref, err)
			}
			if fi, err := os.Stat(target); err == nil && fi.IsDir() {
				if err := w.visit(target); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// readKustomization returns the path and content of the kustomization file
// of dir, the generated one when there is one, or "" when there is none.
func (w *sourceWalker) readKustomization(dir string) (string, []byte, error) {
	for _, name := range kustomizationFileNames {
		if data, ok := w.generated[filepath.Join(dir, name)]; ok {
			return filepath.Join(dir, name), data, nil
		}
	}
	kfile, err := w.findKustomization(dir)
	if err != nil || kfile == "" {
		return "", nil, err
	}
	data, err := readRegularFile(kfile, w.display(kfile))
	return kfile, data, err
}

// findKustomization returns the kustomization file of dir, resolved inside the
// root, or "" when there is none. Names match without regard to case.
func (w *sourceWalker) findKustomization(dir string) (string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return "", fmt.Errorf("cannot read %s: %w", w.display(dir), err)
	}
	for _, want := range kustomizationFileNames {
		for _, e := range entries {
			if !strings.EqualFold(e.Name(), want) {
				continue
			}
			p, err := confine(w.root, dir, e.Name())
			if err != nil {
				return "", fmt.Errorf("%s: %w", w.display(filepath.Join(dir, e.Name())), err)
			}
			return p, nil
		}
	}
	return "", nil
}

// decryptRef decrypts one referenced file into w.out, if it is
// SOPS-encrypted.
func (w *sourceWalker) decryptRef(kfile, dir, ref string, format Format) error {
	wrap := func(err error) error {
		return fmt.Errorf("%s: secretGenerator file %q: %w", w.display(kfile), ref, err)
	}
	path, err := confine(w.root, dir, ref)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return wrap(err)
	}
	if w.done[path] {
		return nil
	}
	w.done[path] = true

	data, err := readRegularFile(path, w.display(path))
	if err != nil {
		return wrap(err)
	}
	if !looksEncrypted(data, format) {
		return nil
	}
	out, err := w.d.decrypt(data, format, true)
	if errors.Is(err, ErrNotEncrypted) {
		return nil
	}
	if err != nil {
		return wrap(err)
	}
	w.out[path] = out
	return nil
}

func (w *sourceWalker) display(path string) string {
	if rel, err := filepath.Rel(w.root, path); err == nil {
		return filepath.ToSlash(rel)
	}
	return path
}

// isRemote reports whether a kustomization reference is a URL or a remote
// git reference rather than a local path.
func isRemote(ref string) bool {
	return strings.Contains(ref, "://") || strings.HasPrefix(ref, "git@") ||
		strings.HasPrefix(ref, "github.com/") || strings.HasPrefix(ref, "gitlab.com/")
}

// relInside returns path relative to root, or an error if it is outside.
func relInside(root, path string) (string, error) {
	rel, err := filepath.Rel(root, path)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return "", fmt.Errorf("%w: %s is not inside the root", ErrPathEscapesRoot, path)
	}
	return rel, nil
}

// confine resolves ref, relative to dir (an absolute, symlink-free directory
// inside root), to a symlink-free absolute path inside root. Absolute refs and
// refs that leave root, lexically or through a symlink, are refused with
// [ErrPathEscapesRoot]. A ref whose target does not exist gives an error
// wrapping fs.ErrNotExist.
func confine(root, dir, ref string) (string, error) {
	if ref == "" {
		return "", fmt.Errorf("%w: empty path", fs.ErrNotExist)
	}
	if filepath.IsAbs(ref) || strings.HasPrefix(ref, "/") || filepath.VolumeName(ref) != "" {
		return "", fmt.Errorf("%w: absolute path %q", ErrPathEscapesRoot, ref)
	}
	joined := filepath.Join(dir, ref)
	rel, err := relInside(root, joined)
	if err != nil {
		return "", fmt.Errorf("%w: %q leaves the root", ErrPathEscapesRoot, ref)
	}
	safe, err := securejoin.SecureJoin(root, rel)
	if err != nil {
		return "", fmt.Errorf("cannot resolve %q: %w", ref, err)
	}
	// SecureJoin clamps symlinks to the root instead of failing; resolve
	// the path the way the OS would and refuse it if the two differ.
	resolved, err := filepath.EvalSymlinks(joined)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			if _, lerr := os.Lstat(safe); lerr == nil && safe != joined {
				return "", fmt.Errorf("%w: %q is a dangling symlink", ErrPathEscapesRoot, ref)
			}
			return "", fmt.Errorf("%w: %q", fs.ErrNotExist, ref)
		}
		return "", fmt.Errorf("cannot resolve %q: %w", ref, err)
	}
	if resolved != safe {
		return "", fmt.Errorf("%w: %q resolves outside the root through a symlink", ErrPathEscapesRoot, ref)
	}
	return safe, nil
}

// readRegularFile reads a regular file of at most MaxEncryptedFileSize bytes.
// The type is checked with Lstat before opening, so that a FIFO cannot block
// the reader and a symlink is not followed, and again on the open file. name
// is how errors refer to the file.
func readRegularFile(path, name string) ([]byte, error) {
	fi, err := os.Lstat(path)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%w: %s is a %s", ErrIrregularFile, name, describeMode(fi.Mode()))
	}
	if fi.Size() > MaxEncryptedFileSize {
		return nil, fmt.Errorf("%w: %s has %d bytes, the limit is %d", ErrFileTooLarge, name, fi.Size(), MaxEncryptedFileSize)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if ofi, err := f.Stat(); err != nil || !os.SameFile(fi, ofi) {
		return nil, fmt.Errorf("%w: %s changed while it was opened", ErrIrregularFile, name)
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxEncryptedFileSize+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > MaxEncryptedFileSize {
		return nil, fmt.Errorf("%w: %s grew past the limit of %d bytes", ErrFileTooLarge, name, MaxEncryptedFileSize)
	}
	return data, nil
}

func describeMode(m fs.FileMode) string {
	switch {
	case m&fs.ModeSymlink != 0:
		return "symlink"
	case m.IsDir():
		return "directory"
	case m&fs.ModeNamedPipe != 0:
		return "FIFO"
	case m&fs.ModeSocket != 0:
		return "socket"
	case m&fs.ModeDevice != 0:
		return "device"
	default:
		return "non-regular file"
	}
}
