package postrender

import (
	"errors"
	"fmt"
	"strings"

	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/resmap"
	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/kustomize/kyaml/kio"
	"sigs.k8s.io/kustomize/kyaml/resid"
	kyaml "sigs.k8s.io/kustomize/kyaml/yaml"
	sigsyaml "sigs.k8s.io/yaml"

	helmv2 "github.com/windlass-dev/windlass/api/helm/v2"
	kustomizev1 "github.com/windlass-dev/windlass/api/kustomize/v1"
	"github.com/windlass-dev/windlass/internal/build"
)

// The in-memory files of a kustomize run.
const (
	kustomizeDir      = "/postrender"
	resourcesFile     = "rendered.yaml"
	kustomizationFile = kustomizeDir + "/kustomization.yaml"
)

// kustomize runs one kustomize post-renderer.
type kustomize struct {
	// field names the post-renderer in the spec, for errors.
	field string
	// kustomization is the generated kustomization.yaml, encoded once.
	kustomization []byte
}

// newKustomize checks the patches and images of k and encodes the
// kustomization that applies them; nil when k has neither.
func newKustomize(field string, k *helmv2.Kustomize) (*kustomize, error) {
	if len(k.Patches) == 0 && len(k.Images) == 0 {
		return nil, nil
	}
	kust := &types.Kustomization{
		TypeMeta:  types.TypeMeta{APIVersion: types.KustomizationVersion, Kind: types.KustomizationKind},
		Resources: []string{resourcesFile},
	}
	for i, p := range k.Patches {
		tp, err := convertPatch(p)
		if err != nil {
			return nil, fmt.Errorf("%s.patches[%d]: %w", field, i, err)
		}
		kust.Patches = append(kust.Patches, tp)
	}
	for i, img := range k.Images {
		if strings.TrimSpace(img.Name) == "" {
			return nil, fmt.Errorf("%s.images[%d]: the name of the image to replace is required", field, i)
		}
		kust.Images = append(kust.Images, types.Image{Name: img.Name, NewName: img.NewName, NewTag: img.NewTag, Digest: img.Digest})
	}
	data, err := sigsyaml.Marshal(kust)
	if err != nil {
		return nil, fmt.Errorf("%s: encoding the kustomization: %w", field, err)
	}
	return &kustomize{field: field, kustomization: data}, nil
}

// convertPatch checks a patch and maps it to kustomize's type: a strategic
// merge patch is a YAML map (one or more documents), a JSON 6902 patch a
// list of operations, which needs a target.
func convertPatch(p kustomizev1.Patch) (types.Patch, error) {
	if strings.TrimSpace(p.Patch) == "" {
		return types.Patch{}, errors.New("the patch is empty")
	}
	isList, err := patchShape(p.Patch)
	if err != nil {
		return types.Patch{}, fmt.Errorf("the patch is neither a strategic merge patch nor a JSON 6902 patch: %w", err)
	}
	if isList && p.Target == nil {
		return types.Patch{}, errors.New("a JSON 6902 patch needs a target")
	}
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
	return tp, nil
}

// patchShape tells a JSON 6902 patch (one list of operations) from a
// strategic merge patch (one or more maps); anything else is an error.
func patchShape(patch string) (isList bool, err error) {
	var ops []any
	if err := sigsyaml.Unmarshal([]byte(patch), &ops); err == nil {
		return true, nil
	}
	docs, err := kio.FromBytes([]byte(patch))
	if err != nil {
		return false, err
	}
	for i, doc := range docs {
		if doc.YNode().Kind != kyaml.MappingNode {
			return false, fmt.Errorf("document %d is not a map", i)
		}
	}
	return false, nil
}

// run passes the documents through kustomize.
func (k *kustomize) run(docs []*kyaml.RNode) ([]*kyaml.RNode, error) {
	if len(docs) == 0 {
		return docs, nil
	}
	stream, err := kio.StringAll(docs)
	if err != nil {
		return nil, fmt.Errorf("post-rendering with %s: %w", k.field, err)
	}
	fsys := filesys.MakeFsInMemory()
	if err := fsys.MkdirAll(kustomizeDir); err != nil {
		return nil, fmt.Errorf("post-rendering with %s: %w", k.field, err)
	}
	if err := fsys.WriteFile(kustomizationFile, k.kustomization); err != nil {
		return nil, fmt.Errorf("post-rendering with %s: %w", k.field, err)
	}
	if err := fsys.WriteFile(kustomizeDir+"/"+resourcesFile, []byte(stream)); err != nil {
		return nil, fmt.Errorf("post-rendering with %s: %w", k.field, err)
	}
	m, err := runKustomize(fsys)
	if err != nil {
		return nil, fmt.Errorf("post-rendering with %s: %w", k.field, err)
	}
	out := make([]*kyaml.RNode, 0, m.Size())
	for _, r := range m.Resources() {
		out = append(out, &r.RNode)
	}
	return out, nil
}

// runKustomize runs kustomize on the in-memory kustomization, without
// reordering, with builtin plugins only, holding the process-wide kustomize
// lock; a panic becomes an error.
func runKustomize(fsys filesys.FileSystem) (m resmap.ResMap, err error) {
	build.Exclusively(func() {
		defer func() {
			if r := recover(); r != nil {
				m, err = nil, fmt.Errorf("kustomize panicked: %v", r)
			}
		}()
		k := krusty.MakeKustomizer(&krusty.Options{
			Reorder:           krusty.ReorderOptionNone,
			AddManagedbyLabel: false,
			LoadRestrictions:  types.LoadRestrictionsRootOnly,
			PluginConfig:      types.DisabledPluginConfig(),
		})
		m, err = k.Run(fsys, kustomizeDir)
	})
	return m, err
}
