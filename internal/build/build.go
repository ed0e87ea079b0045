package build

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/resmap"
	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	kyaml "sigs.k8s.io/kustomize/kyaml/yaml"
	sigsyaml "sigs.k8s.io/yaml"
)

// buildMu serialises kustomize runs: kustomize keeps process-wide state
// (openapi schema, plugin registries) that races when builds overlap.
var buildMu sync.Mutex

// Exclusively runs f while no other kustomize run of this process runs.
// Build does; any other caller of the kustomize API (the install renderer)
// must too, since kustomize keeps process-wide state.
func Exclusively(f func()) {
	buildMu.Lock()
	defer buildMu.Unlock()
	f()
}

// Build builds the kustomization at path (relative to root, the extracted
// artifact; a leading "/" is also taken relative to root), applies opts on
// top of it, and returns the objects in a deterministic order.
//
// The directory at path must hold a kustomization file; call Generate first
// when it may not. Nothing outside root is read.
func Build(root, path string, opts Options) ([]*unstructured.Unstructured, error) {
	docs, err := BuildDocuments(root, path, opts)
	if err != nil {
		return nil, err
	}
	return docs.Objects(nil)
}

// BuildDocuments is Build, returning the objects as documents that keep
// the scalar styles (quoting) of the sources, in this process. Post-build
// variable substitution works on these documents, because whether "${x}"
// was quoted decides whether its value stays a string.
func BuildDocuments(root, path string, opts Options) (*Documents, error) {
	m, err := prepareAndRun(root, path, opts)
	if err != nil {
		return nil, err
	}
	return documentsOf(m), nil
}

// BuildYAML is BuildDocuments, each document written as YAML.
func BuildYAML(root, path string, opts Options) ([][]byte, error) {
	m, err := prepareAndRun(root, path, opts)
	if err != nil {
		return nil, err
	}
	return documents(m)
}

// prepareAndRun prepares the build and runs it in this process.
func prepareAndRun(root, path string, opts Options) (resmap.ResMap, error) {
	p, err := prepare(root, path, opts)
	if err != nil {
		return nil, err
	}
	return p.build()
}

// prepared is a build whose references are checked, ready to run.
type prepared struct {
	fsys *ConfinedFS
	path string
	dir  string
	ov   string
	opts Options
	// input is what the build reads, in bytes: the kustomization files
	// and the files they reach, a base counted each time it is included.
	input int64
}

// prepare checks a build and serves its overlay, without running it.
func prepare(root, path string, opts Options) (*prepared, error) {
	fsys, err := NewConfinedFS(root)
	if err != nil {
		return nil, err
	}
	for name, data := range opts.Files {
		if !within(fsys.Root(), filepath.Clean(name)) {
			return nil, fmt.Errorf("in-memory file %q: %w", name, ErrOutsideRoot)
		}
		fsys.addVirtualFile(name, data)
	}
	dir, err := buildDir(fsys, path)
	if err != nil {
		return nil, err
	}
	if err := checkBuildMetadata(opts.BuildMetadata); err != nil {
		return nil, err
	}
	ov, err := addOverlay(fsys, dir, opts)
	if err != nil {
		return nil, fmt.Errorf("kustomize build of %q: %w", path, err)
	}
	input, err := checkReferences(fsys, ov, opts.NoRemoteBases)
	if err != nil {
		return nil, fmt.Errorf("kustomize build of %q: %w", path, err)
	}
	return &prepared{fsys: fsys, path: path, dir: dir, ov: ov, opts: opts, input: input}, nil
}

// build runs kustomize on the prepared build, in this process.
func (p *prepared) build() (resmap.ResMap, error) {
	m, err := run(p.fsys, p.ov)
	if err != nil {
		return nil, fmt.Errorf("kustomize build of %q: %w", p.path, tidyError(err, p.fsys.Root(), p.ov, p.dir))
	}
	if len(p.opts.BuildMetadata) > 0 {
		if err := relocateBuildMetadata(m, p.ov, p.dir); err != nil {
			return nil, fmt.Errorf("kustomize build of %q: %w", p.path, err)
		}
	}
	return m, nil
}

// buildError keeps the error kustomize returned for errors.Is and errors.As,
// with a message that leaves out the generated overlay and the temporary
// location of root.
type buildError struct {
	msg string
	err error
}

// Error returns the tidied message.
func (e *buildError) Error() string { return e.msg }

// Unwrap returns the error kustomize returned.
func (e *buildError) Unwrap() error { return e.err }

// tidyError removes the overlay's own layer of kustomize's error wrapping
// and shows paths relative to root.
func tidyError(err error, root, ov, dir string) error {
	base, _ := filepath.Rel(ov, dir)
	msg := err.Error()
	msg = strings.Replace(msg, fmt.Sprintf(
		"accumulating resources: accumulation err='accumulating resources from '%s': '%s' must resolve to a file': ",
		base, dir), "", 1)
	msg = strings.Replace(msg, fmt.Sprintf("recursed accumulation of path '%s': ", dir), "", 1)
	msg = strings.ReplaceAll(msg, root+string(filepath.Separator), "")
	msg = strings.ReplaceAll(msg, root, ".")
	return &buildError{msg: msg, err: err}
}

// buildDir resolves path inside root and checks that it is a directory.
func buildDir(fsys *ConfinedFS, path string) (string, error) {
	dir, err := fsys.Resolve(filepath.Join(fsys.Root(), path))
	if err != nil {
		return "", fmt.Errorf("build path %q: %w", path, err)
	}
	if !fsys.IsDir(dir) {
		return "", fmt.Errorf("build path %q is not a directory", path)
	}
	return dir, nil
}

// run executes kustomize on dir with builtin plugins only, loads restricted
// to each kustomization's root, and panics turned into errors.
func run(fsys *ConfinedFS, dir string) (m resmap.ResMap, err error) {
	buildMu.Lock()
	defer buildMu.Unlock()
	defer func() {
		if r := recover(); r != nil {
			m, err = nil, fmt.Errorf("kustomize panicked: %v", r)
		}
	}()
	return kustomizeRun(fsys, dir)
}

// kustomizeRun runs kustomize; tests replace it to exercise panic recovery.
var kustomizeRun = func(fsys filesys.FileSystem, dir string) (resmap.ResMap, error) {
	k := krusty.MakeKustomizer(&krusty.Options{
		Reorder:           krusty.ReorderOptionLegacy,
		AddManagedbyLabel: false,
		LoadRestrictions:  types.LoadRestrictionsRootOnly,
		PluginConfig:      types.DisabledPluginConfig(),
	})
	return k.Run(fsys, dir)
}

// documents renders every resource of m as YAML.
func documents(m resmap.ResMap) ([][]byte, error) {
	var docs [][]byte
	for _, r := range m.Resources() {
		data, err := r.RNode.String()
		if err != nil {
			return nil, fmt.Errorf("encoding %s: %w", r.CurId(), err)
		}
		docs = append(docs, []byte(data))
	}
	return docs, nil
}

// Locate adds to a DecodeError of the build of path in root (as BuildYAML
// with opts) the file its object comes from, found by building again with
// origin annotations: only a build that failed pays for it. Any other
// error, or a second build that tells nothing, is returned as it is.
func Locate(err error, root, path string, opts Options) error {
	var de *DecodeError
	if !errors.As(err, &de) || de.File != "" {
		return err
	}
	if !slices.Contains(opts.BuildMetadata, OriginAnnotations) {
		opts.BuildMetadata = append(slices.Clone(opts.BuildMetadata), OriginAnnotations)
	}
	docs, berr := BuildYAML(root, path, opts)
	if berr != nil || de.Index >= len(docs) {
		return err
	}
	rn, perr := kyaml.Parse(string(docs[de.Index]))
	if perr != nil {
		return err
	}
	var origin struct {
		Path string `json:"path"`
	}
	if yerr := sigsyaml.Unmarshal([]byte(rn.GetAnnotations()[buildMetadataAnnotations[0]]), &origin); yerr != nil || origin.Path == "" {
		return err
	}
	located := *de
	located.File = filepath.ToSlash(filepath.Join(path, origin.Path))
	return &located
}
