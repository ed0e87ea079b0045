package postrender

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	"helm.sh/helm/v4/pkg/postrenderer"
	"sigs.k8s.io/kustomize/kyaml/kio"
	kyaml "sigs.k8s.io/kustomize/kyaml/yaml"

	helmv2 "github.com/windlass-dev/windlass/api/helm/v2"
)

// step changes the documents of a stream in place or returns new ones.
type step interface {
	run(docs []*kyaml.RNode) ([]*kyaml.RNode, error)
}

// chain is the post-renderer of one HelmRelease: its steps run in order on
// the stream Helm passes. It is safe for concurrent use.
type chain struct {
	steps []step
}

var _ postrenderer.PostRenderer = (*chain)(nil)

// New returns the post-renderer of hr: its kustomize post-renderers in
// order, then its common metadata, then the owner labels (see the package
// documentation). It checks the post-renderers' patches and images first;
// the error of an invalid one names it by its place in the spec.
func New(hr *helmv2.HelmRelease) (postrenderer.PostRenderer, error) {
	c := &chain{}
	for i, pr := range hr.Spec.PostRenderers {
		if pr.Kustomize == nil {
			continue
		}
		k, err := newKustomize(fmt.Sprintf("spec.postRenderers[%d].kustomize", i), pr.Kustomize)
		if err != nil {
			return nil, err
		}
		if k != nil {
			c.steps = append(c.steps, k)
		}
	}
	if cm := hr.Spec.CommonMetadata; cm != nil && (len(cm.Labels) > 0 || len(cm.Annotations) > 0) {
		c.steps = append(c.steps, &metadata{labels: cm.Labels, annotations: cm.Annotations})
	}
	c.steps = append(c.steps, &metadata{labels: map[string]string{
		helmv2.NameLabel:      hr.Name,
		helmv2.NamespaceLabel: hr.Namespace,
	}})
	return c, nil
}

// Run post-renders the manifests: it parses the stream, runs each step and
// writes the documents back, in their order.
func (c *chain) Run(rendered *bytes.Buffer) (*bytes.Buffer, error) {
	docs, err := kio.FromBytes(rendered.Bytes())
	if err != nil {
		return nil, fmt.Errorf("post-rendering: parsing the rendered manifests: %w", err)
	}
	for _, s := range c.steps {
		if docs, err = s.run(docs); err != nil {
			return nil, err
		}
	}
	out, err := kio.StringAll(docs)
	if err != nil {
		return nil, fmt.Errorf("post-rendering: writing the manifests: %w", err)
	}
	return bytes.NewBufferString(out), nil
}

// Digest returns the digest of hr's spec.postRenderers, for
// status.observedPostRenderersDigest: "" when the field is not set.
func Digest(hr *helmv2.HelmRelease) string {
	if hr.Spec.PostRenderers == nil {
		return ""
	}
	return jsonDigest(hr.Spec.PostRenderers)
}

// CommonMetadataDigest returns the digest of hr's spec.commonMetadata, for
// status.observedCommonMetadataDigest: "" when the field is not set.
func CommonMetadataDigest(hr *helmv2.HelmRelease) string {
	if hr.Spec.CommonMetadata == nil {
		return ""
	}
	return jsonDigest(hr.Spec.CommonMetadata)
}

// jsonDigest returns "sha256:<hex>" of v's JSON encoding and a newline.
func jsonDigest(v any) string {
	data, err := json.Marshal(v)
	if err != nil {
		// API types always encode.
		return ""
	}
	h := sha256.New()
	h.Write(data)
	h.Write([]byte{'\n'})
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

// metadata sets labels and annotations on every object's metadata.
type metadata struct {
	labels, annotations map[string]string
}

// run sets the labels and annotations, in key order so that the output is
// the same for the same input.
func (m *metadata) run(docs []*kyaml.RNode) ([]*kyaml.RNode, error) {
	labelKeys, annotationKeys := sortedKeys(m.labels), sortedKeys(m.annotations)
	for _, doc := range docs {
		if err := setMetadata(doc, kyaml.LabelsField, labelKeys, m.labels); err != nil {
			return nil, err
		}
		if err := setMetadata(doc, kyaml.AnnotationsField, annotationKeys, m.annotations); err != nil {
			return nil, err
		}
	}
	return docs, nil
}

// setMetadata sets keys of values in the metadata field (labels or
// annotations) of doc, as plain strings that are quoted only where YAML
// needs it.
func setMetadata(doc *kyaml.RNode, field string, keys []string, values map[string]string) error {
	if len(keys) == 0 {
		return nil
	}
	node, err := doc.Pipe(kyaml.LookupCreate(kyaml.MappingNode, kyaml.MetadataField, field))
	if err != nil {
		return fmt.Errorf("post-rendering: setting %s on %s: %w", field, subject(doc), err)
	}
	for _, k := range keys {
		if err := node.PipeE(kyaml.SetField(k, kyaml.NewStringRNode(values[k]))); err != nil {
			return fmt.Errorf("post-rendering: setting %s %s on %s: %w", field, k, subject(doc), err)
		}
	}
	return nil
}

// subject names a document as Kind/namespace/name for errors.
func subject(doc *kyaml.RNode) string {
	ns := doc.GetNamespace()
	if ns == "" {
		return doc.GetKind() + "/" + doc.GetName()
	}
	return doc.GetKind() + "/" + ns + "/" + doc.GetName()
}

// sortedKeys returns the keys of m in order.
func sortedKeys(m map[string]string) []string {
	return slices.Sorted(maps.Keys(m))
}
