package build

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/kustomize/api/resmap"
	kyaml "sigs.k8s.io/kustomize/kyaml/yaml"
)

// Documents are the objects of one build, in order, each a YAML document.
// A build in this process hands over the nodes kustomize parsed, which are
// decoded as they are: never written out as YAML to be parsed again. The
// YAML a build process sent is parsed one document at a time as it is
// decoded, so that a large build is never held parsed whole.
type Documents struct {
	nodes []*yaml.Node
	yaml  [][]byte
}

// documentsOf takes the nodes of m's resources; m is not used again.
func documentsOf(m resmap.ResMap) *Documents {
	resources := m.Resources()
	nodes := make([]*yaml.Node, len(resources))
	for i, r := range resources {
		nodes[i] = r.RNode.YNode()
	}
	return &Documents{nodes: nodes}
}

// FromYAML returns the documents docs, one object each, as BuildYAML
// writes them. docs itself is not changed.
func FromYAML(docs [][]byte) *Documents { return &Documents{yaml: slices.Clone(docs)} }

// Len is the number of documents.
func (d *Documents) Len() int { return len(d.nodes) + len(d.yaml) }

// YAML returns every document written as YAML.
func (d *Documents) YAML() ([][]byte, error) {
	if d.nodes == nil {
		return d.yaml, nil
	}
	out := make([][]byte, len(d.nodes))
	for i, n := range d.nodes {
		s, err := kyaml.String(n)
		if err != nil {
			return nil, fmt.Errorf("encoding document %d: %w", i, err)
		}
		out[i] = []byte(s)
	}
	return out, nil
}

// Objects decodes the documents into unstructured objects, in order,
// first letting edit (when not nil) change each document's node in place:
// its top mapping. An error of edit stops the decoding and is returned as
// it is; a document that does not decode into an object is a
// *DecodeError. Objects consumes the documents: each is let go once
// decoded, so that a build is not held twice.
func (d *Documents) Objects(edit func(*yaml.Node) error) ([]*unstructured.Unstructured, error) {
	if sharesNodes(d.nodes) {
		// An edit of a node in two places (or asWritten) would change
		// both at once, where YAML holds two copies, each edited as its
		// own place says: edit copies, as YAML.
		docs, err := d.YAML()
		if err != nil {
			return nil, err
		}
		d.nodes, d.yaml = nil, docs
	}
	objs := make([]*unstructured.Unstructured, 0, d.Len())
	for i := range d.Len() {
		n, err := d.take(i)
		if err != nil {
			return nil, err
		}
		if edit != nil {
			if err := edit(n); err != nil {
				return nil, err
			}
		}
		obj, err := decodeNode(i, n)
		if err != nil {
			return nil, err
		}
		objs = append(objs, obj)
	}
	return objs, nil
}

// sharesNodes reports whether a scalar that an edit or asWritten may
// change (one holding "${", or empty) is in more than one place of nodes
// (an alias, which names its anchor's node, is not a second place).
// kustomize copies what it moves from one object to another, but a
// transformer that did not would leave one node in two objects.
func sharesNodes(nodes []*yaml.Node) bool {
	seen := map[*yaml.Node]struct{}{}
	var visit func(n *yaml.Node) bool
	visit = func(n *yaml.Node) bool {
		if n.Kind != yaml.ScalarNode {
			return slices.ContainsFunc(n.Content, visit)
		}
		if n.Value != "" && !strings.Contains(n.Value, "${") {
			return false
		}
		_, twice := seen[n]
		seen[n] = struct{}{}
		return twice
	}
	return slices.ContainsFunc(nodes, visit)
}

// take returns the top mapping of document i, parsing it when it is
// YAML, and lets the document go.
func (d *Documents) take(i int) (*yaml.Node, error) {
	if d.nodes != nil {
		n := d.nodes[i]
		d.nodes[i] = nil
		asWritten(n, false)
		return n, nil
	}
	data := d.yaml[i]
	d.yaml[i] = nil
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("document %d: %w", i, err)
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 {
		return nil, fmt.Errorf("document %d: not one object", i)
	}
	asWritten(doc.Content[0], false)
	return doc.Content[0], nil
}

// quotedStyles are the styles that make a scalar a string.
const quotedStyles = yaml.SingleQuotedStyle | yaml.DoubleQuotedStyle | yaml.LiteralStyle | yaml.FoldedStyle

// asWritten changes n, below a flow collection when flow is true, as
// writing it out as YAML and reading that back would: kustomize's own
// output, and what the documents were before they were handed over
// parsed. A YAML writer keeps every value and type but two: an empty plain
// scalar (a null) in a flow collection or as a key is written as a quoted
// empty string; and a plain scalar holding "${" in a flow collection is
// written quoted, so that post-build substitution keeps its result a
// string.
func asWritten(n *yaml.Node, flow bool) {
	switch n.Kind {
	case yaml.DocumentNode:
		for _, c := range n.Content {
			asWritten(c, flow)
		}
	case yaml.SequenceNode, yaml.MappingNode:
		flow = flow || n.Style&yaml.FlowStyle != 0
		for i, c := range n.Content {
			key := n.Kind == yaml.MappingNode && i%2 == 0
			asWritten(c, flow || key && c.Value == "")
		}
	case yaml.ScalarNode:
		if !flow || n.Style&(quotedStyles|yaml.TaggedStyle) != 0 {
			return
		}
		switch {
		case n.Value == "" && (n.Tag == "" || n.Tag == "!!null"):
			n.Tag, n.Style = "!!str", yaml.SingleQuotedStyle
		case strings.Contains(n.Value, "${"):
			n.Style = yaml.SingleQuotedStyle
		}
	}
}

// decodeNode decodes document i, parsed as n, into an object: its YAML
// values as JSON holds them (integers as int64, other numbers as float64),
// read as YAML 1.2 as kustomize reads it ("y" and "no" stay strings).
func decodeNode(i int, n *yaml.Node) (*unstructured.Unstructured, error) {
	if n.Kind != yaml.MappingNode {
		return nil, documentError(i, n, fmt.Errorf("a %s is not an object", kindName(n.Kind)))
	}
	fields := map[string]any{}
	if err := n.Decode(&fields); err != nil {
		return nil, documentError(i, n, err)
	}
	j, err := json.Marshal(fields)
	if err != nil {
		return nil, documentError(i, n, err)
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(j); err != nil {
		return nil, documentError(i, n, err)
	}
	return u, nil
}

// kindName names a YAML node kind for errors.
func kindName(k yaml.Kind) string {
	switch k {
	case yaml.SequenceNode:
		return "list"
	case yaml.ScalarNode:
		return "scalar"
	case yaml.AliasNode:
		return "alias"
	}
	return "document"
}

// Decode parses YAML documents, one object each (as returned by BuildYAML),
// into unstructured objects, keeping their order. It reads YAML as kustomize
// does (YAML 1.2: "y" and "no" are strings, not booleans).
func Decode(docs [][]byte) ([]*unstructured.Unstructured, error) {
	return FromYAML(docs).Objects(nil)
}

// DecodeError is a document of a build that does not decode into an
// object, such as one with a duplicate key.
type DecodeError struct {
	// Index is the document's place in the build, from 0.
	Index int
	// Object names it: Kind namespace/name, or "document" when it is not
	// a mapping.
	Object string
	// File is the file it comes from, relative to the build's root, when
	// Locate found it.
	File string
	// Reason is the YAML error, on one line; its line numbers are those of
	// the file the object was read from (as kustomize read it) when the
	// build ran in this process, of the built document otherwise.
	Reason string
	err    error
}

// Error says which object, from which file, and why.
func (e *DecodeError) Error() string {
	in := ""
	if e.File != "" {
		in = " in " + e.File
	}
	return fmt.Sprintf("%s%s (document %d of the build): %s", e.Object, in, e.Index, e.Reason)
}

// Unwrap returns the YAML error.
func (e *DecodeError) Unwrap() error { return e.err }

// documentError returns the DecodeError of document i, n, whose decoding
// failed with err.
func documentError(i int, n *yaml.Node, err error) error {
	msg := strings.Replace(err.Error(), "unmarshal errors:\n  ", "", 1)
	msg = strings.ReplaceAll(msg, "\n  ", "; ")
	object := "document"
	if n.Kind == yaml.MappingNode {
		rn := kyaml.NewRNode(n)
		object = rn.GetName()
		if ns := rn.GetNamespace(); ns != "" {
			object = ns + "/" + object
		}
		object = rn.GetKind() + " " + object
	}
	return &DecodeError{Index: i, Object: object, Reason: msg, err: err}
}
