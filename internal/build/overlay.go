package build

import (
	"errors"
	"fmt"
	"path/filepath"

	"sigs.k8s.io/kustomize/api/konfig"
	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/resid"
	sigsyaml "sigs.k8s.io/yaml"
)

// overlayDir returns the virtual directory that holds the generated overlay:
// a sibling of root, so that the user's path (often root itself) is never an
// ancestor of the overlay, which kustomize would refuse as a cycle.
func overlayDir(root string) (string, error) {
	parent := filepath.Dir(root)
	if parent == root {
		return "", errors.New("the filesystem root cannot be used as the build root")
	}
	return filepath.Join(parent, "."+filepath.Base(root)+".windlass-overlay"), nil
}

// addOverlay serves, in memory, an overlay kustomization whose only resource
// is dir (a resolved directory inside root) and which applies opts. It
// returns the directory to build: the overlay's, or dir itself when opts
// were folded into dir's generated kustomization (see foldable).
func addOverlay(fsys *ConfinedFS, dir string, opts Options) (string, error) {
	if generated, resources, ok := foldable(fsys, dir, opts); ok {
		return dir, fold(fsys, dir, generated, resources, opts)
	}
	ov, err := overlayDir(fsys.Root())
	if err != nil {
		return "", err
	}
	if err := addComponents(fsys, dir, opts); err != nil {
		return "", err
	}
	base, err := filepath.Rel(ov, dir)
	if err != nil {
		return "", err
	}
	k, err := overlayKustomization([]string{filepath.ToSlash(base)}, opts)
	if err != nil {
		return "", err
	}
	return ov, serveKustomization(fsys, filepath.Join(ov, konfig.DefaultKustomizationFileName()), k)
}

// foldable returns dir's kustomization file, its resources and true when
// opts can be written into it instead of an overlay on top of it: the file
// is served from memory in place of none on the disk (a generated one), is
// a Kustomization (not a Component) and names resources only, so that it
// transforms nothing and one kustomization with both its resources and opts
// builds the same objects as the two, for less of kustomize's time and
// memory (BenchmarkBuild_GeneratedKustomization). Build metadata keeps the
// overlay, since its annotations' paths are written relative to it.
func foldable(fsys *ConfinedFS, dir string, opts Options) (string, []string, bool) {
	if len(opts.BuildMetadata) > 0 || hasKustomization(dir) {
		return "", nil, false
	}
	for _, n := range konfig.RecognizedKustomizationFileNames() {
		name := filepath.Join(dir, n)
		data, ok := fsys.virtual[name]
		if !ok {
			continue
		}
		doc, err := parseKustomization(data)
		if err != nil || (doc["kind"] != nil && doc["kind"] != types.KustomizationKind) {
			return "", nil, false
		}
		for key := range doc {
			if key != "apiVersion" && key != "kind" && key != "resources" {
				return "", nil, false
			}
		}
		// parseKustomization has checked that the resources are strings.
		return name, stringList(doc["resources"]), true
	}
	return "", nil, false
}

// stringList returns v, a decoded YAML list of strings, as strings.
func stringList(v any) []string {
	entries, _ := v.([]any)
	out := make([]string, 0, len(entries))
	for _, e := range entries {
		s, _ := e.(string)
		out = append(out, s)
	}
	return out
}

// fold serves the generated kustomization file name again with its
// resources and opts, components included.
func fold(fsys *ConfinedFS, dir, name string, resources []string, opts Options) error {
	comps, err := checkComponents(fsys, dir, opts)
	if err != nil {
		return err
	}
	k, err := overlayKustomization(resources, opts)
	if err != nil {
		return err
	}
	k.Components = comps
	return serveKustomization(fsys, name, k)
}

// serveKustomization serves k, in memory, as the file name.
func serveKustomization(fsys *ConfinedFS, name string, k *types.Kustomization) error {
	data, err := sigsyaml.Marshal(k)
	if err != nil {
		return fmt.Errorf("encoding the overlay kustomization: %w", err)
	}
	fsys.addVirtualFile(name, data)
	return nil
}

// overlayKustomization maps opts to a kustomization of resources.
func overlayKustomization(resources []string, opts Options) (*types.Kustomization, error) {
	k := &types.Kustomization{
		TypeMeta: types.TypeMeta{
			APIVersion: types.KustomizationVersion,
			Kind:       types.KustomizationKind,
		},
		Resources:     resources,
		NamePrefix:    opts.NamePrefix,
		NameSuffix:    opts.NameSuffix,
		Namespace:     opts.TargetNamespace,
		Patches:       overlayPatches(opts.Patches),
		Images:        overlayImages(opts.Images),
		BuildMetadata: opts.BuildMetadata,
	}
	if err := addCommonMetadata(k, opts.CommonMetadata); err != nil {
		return nil, err
	}
	return k, nil
}

func overlayPatches(in []Patch) []types.Patch {
	var out []types.Patch
	for _, p := range in {
		tp := types.Patch{Patch: p.Patch}
		if t := p.Target; t != nil {
			tp.Target = &types.Selector{
				ResId: resid.ResId{
					Gvk:       resid.Gvk{Group: t.Group, Version: t.Version, Kind: t.Kind},
					Name:      t.Name,
					Namespace: t.Namespace,
				},
				LabelSelector:      t.LabelSelector,
				AnnotationSelector: t.AnnotationSelector,
			}
		}
		out = append(out, tp)
	}
	return out
}

func overlayImages(in []Image) []types.Image {
	var out []types.Image
	for _, img := range in {
		out = append(out, types.Image{
			Name:    img.Name,
			NewName: img.NewName,
			NewTag:  img.NewTag,
			Digest:  img.Digest,
		})
	}
	return out
}

// addComponents serves, in memory, a copy of the kustomization file in dir
// with opts.Components appended to its components. Components run inside
// the user's kustomization, as in the Kustomization API: they see the
// objects before the user's name prefix and namespace are applied, and the
// resources they add receive those transformations too.
func addComponents(fsys *ConfinedFS, dir string, opts Options) error {
	comps, err := checkComponents(fsys, dir, opts)
	if err != nil || len(comps) == 0 {
		return err
	}
	name, data, ok := readKustomization(fsys, dir)
	if !ok {
		return fmt.Errorf("components need a kustomization file in %q", fsys.rel(dir))
	}
	doc, err := parseKustomization(data)
	if err != nil {
		return fmt.Errorf("kustomization file %q: %w", fsys.rel(name), err)
	}
	existing, _ := doc["components"].([]any)
	for _, c := range comps {
		existing = append(existing, c)
	}
	doc["components"] = existing
	out, err := sigsyaml.Marshal(doc)
	if err != nil {
		return fmt.Errorf("kustomization file %q: %w", fsys.rel(name), err)
	}
	fsys.addVirtualFile(name, out)
	return nil
}

// checkComponents validates the components, given relative to dir, and
// drops missing ones when asked to. Paths outside root are an error even
// then.
func checkComponents(fsys *ConfinedFS, dir string, opts Options) ([]string, error) {
	var out []string
	for _, c := range opts.Components {
		if isRemote(c) {
			return nil, fmt.Errorf("component %q: %w", c, ErrRemoteReference)
		}
		if filepath.IsAbs(c) {
			return nil, fmt.Errorf("component %q: absolute paths are not allowed: %w", c, ErrOutsideRoot)
		}
		real, err := fsys.Resolve(filepath.Join(dir, c))
		if err != nil {
			return nil, fmt.Errorf("component %q: %w", c, err)
		}
		if !fsys.IsDir(real) {
			if opts.IgnoreMissingComponents {
				continue
			}
			return nil, fmt.Errorf("component %q: directory %q not found", c, fsys.rel(real))
		}
		out = append(out, filepath.ToSlash(filepath.Clean(c)))
	}
	return out, nil
}

// addCommonMetadata sets labels through the labels field without selectors
// or templates, and annotations through an inline AnnotationsTransformer
// restricted to metadata.annotations.
func addCommonMetadata(k *types.Kustomization, cm *CommonMetadata) error {
	if cm == nil {
		return nil
	}
	if len(cm.Labels) > 0 {
		k.Labels = []types.Label{{Pairs: cm.Labels}}
	}
	if len(cm.Annotations) == 0 {
		return nil
	}
	t := map[string]any{
		"apiVersion":  "builtin",
		"kind":        "AnnotationsTransformer",
		"metadata":    map[string]any{"name": "windlass-common-annotations"},
		"annotations": cm.Annotations,
		"fieldSpecs":  []any{map[string]any{"path": "metadata/annotations", "create": true}},
	}
	data, err := sigsyaml.Marshal(t)
	if err != nil {
		return fmt.Errorf("encoding the common annotations: %w", err)
	}
	k.Transformers = append(k.Transformers, string(data))
	return nil
}
