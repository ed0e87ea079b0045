package build

import (
	"fmt"
	"path/filepath"
	"strings"

	"sigs.k8s.io/kustomize/api/konfig"
	"sigs.k8s.io/kustomize/api/resmap"
	sigsyaml "sigs.k8s.io/yaml"
)

// Build metadata options of Options.BuildMetadata, as in a kustomization's
// buildMetadata field.
const (
	OriginAnnotations      = "originAnnotations"
	TransformerAnnotations = "transformerAnnotations"
)

// buildMetadataAnnotations are the annotations kustomize writes for
// buildMetadata; both hold YAML with file paths.
var buildMetadataAnnotations = []string{
	"config.kubernetes.io/origin",
	"alpha.config.kubernetes.io/transformations",
}

// checkBuildMetadata refuses options kustomize does not know, which it
// would otherwise ignore.
func checkBuildMetadata(opts []string) error {
	for _, o := range opts {
		if o != OriginAnnotations && o != TransformerAnnotations {
			return fmt.Errorf("buildMetadata %q: want %q or %q", o, OriginAnnotations, TransformerAnnotations)
		}
	}
	return nil
}

// relocateBuildMetadata rewrites the file paths of the build metadata
// annotations, which kustomize writes relative to the generated overlay, to
// be relative to dir, the directory that was built: the output matches
// `kustomize build` of that directory, and the overlay (whose fields come
// from the spec, as if written into dir's kustomization file) and the
// location of the extracted artifact do not show.
func relocateBuildMetadata(m resmap.ResMap, ov, dir string) error {
	for _, r := range m.Resources() {
		ann := r.GetAnnotations()
		changed := false
		for _, key := range buildMetadataAnnotations {
			v, ok := ann[key]
			if !ok {
				continue
			}
			nv, err := relocatePaths(v, ov, dir)
			if err != nil {
				return fmt.Errorf("%s: annotation %s: %w", r.CurId(), key, err)
			}
			ann[key] = nv
			changed = true
		}
		if changed {
			if err := r.SetAnnotations(ann); err != nil {
				return err
			}
		}
	}
	return nil
}

// relocatePaths rewrites the path and configuredIn fields of one
// annotation's YAML value: a map (origin) or a list of maps
// (transformations).
func relocatePaths(value, ov, dir string) (string, error) {
	var doc any
	if err := sigsyaml.Unmarshal([]byte(value), &doc); err != nil {
		return "", err
	}
	entries, isList := doc.([]any)
	if !isList {
		entries = []any{doc}
	}
	for _, e := range entries {
		fields, ok := e.(map[string]any)
		if !ok {
			continue
		}
		for _, f := range []string{"path", "configuredIn"} {
			if p, ok := fields[f].(string); ok && p != "" {
				fields[f] = relocatePath(p, ov, dir)
			}
		}
	}
	out, err := sigsyaml.Marshal(doc)
	return string(out), err
}

// relocatePath maps a path relative to ov to a path relative to dir; the
// overlay's own kustomization file maps to dir's kustomization file.
func relocatePath(p, ov, dir string) string {
	abs := filepath.Join(ov, filepath.FromSlash(p))
	if filepath.Dir(abs) == ov {
		return konfig.DefaultKustomizationFileName()
	}
	rel, err := filepath.Rel(dir, abs)
	if err != nil || strings.HasPrefix(rel, "/") {
		return p
	}
	return filepath.ToSlash(rel)
}
