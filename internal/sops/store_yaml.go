package sops

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"

	"go.yaml.in/yaml/v3"
)

// A SOPS YAML file is a stream of documents, each a map; the first holds the
// metadata under its top-level `sops` key. Values and comments are decrypted
// in the parsed yaml.Node tree itself, so the output keeps the key order,
// the styles of the unencrypted values and the comments where they were.
//
// Comments take part in decryption: each one is encrypted with the key path
// of the collection SOPS attaches it to as additional data, and the comment
// rules look at the comments before a value. The reader therefore lists the
// comments of each yaml.Node in the order and at the level SOPS reads them:
//
//   - the comments of a map or list node belong to that collection (the
//     document's and its top map's to the top level), before its entries,
//     the foot comment after them;
//   - a map entry's key comments and, when the value is a scalar or an
//     alias, the value's comments belong to the enclosing map, around the
//     entry;
//   - a list item's comments belong to the list, around the item.

const (
	// yamlIndent is the indentation SOPS writes YAML with.
	yamlIndent = 4
	// maxYAMLDepth bounds the nesting of the tree, aliases included.
	maxYAMLDepth = 10000
	// maxAliasNodes bounds the nodes that aliases expand to in the tree,
	// against documents built to expand exponentially.
	maxAliasNodes = 1 << 16
)

// yamlReader builds the tree of a YAML stream and remembers where to write
// the walked values back.
type yamlReader struct {
	leaves   []*node // values, ref is a *yamlLeaf
	comments []*node // comments, ref is a commentRef
	aliases  int     // alias expansion budget left
}

// yamlLeaf locates a scalar: its node and, for a list item, the list.
type yamlLeaf struct {
	node *yaml.Node
	list *yaml.Node
}

// commentRef locates one line of a yaml.Node comment field.
type commentRef struct {
	field *string
	lines []string // the field's lines, shared by its comments
	line  int
}

func parseYAMLDocument(data []byte) (*parsedDocument, error) {
	docs, err := decodeYAMLStream(data)
	if err != nil {
		return nil, err
	}
	r := &yamlReader{aliases: maxAliasNodes}
	out := &parsedDocument{listComments: true}
	for i, d := range docs {
		body, err := yamlBody(d)
		if err != nil {
			return nil, err
		}
		meta, err := r.takeMetadata(body, i == 0)
		if err != nil {
			return nil, err
		}
		if i == 0 {
			out.meta = meta
		}
		root, err := r.document(d, body)
		if err != nil {
			return nil, err
		}
		out.roots = append(out.roots, root)
	}
	out.render = func() ([]byte, error) { return r.render(docs) }
	return out, nil
}

var yamlErrorLine = regexp.MustCompile(`^yaml: line (\d+):`)

func decodeYAMLStream(data []byte) ([]*yaml.Node, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var docs []*yaml.Node
	for {
		d := &yaml.Node{}
		err := dec.Decode(d)
		if err == io.EOF {
			return docs, nil
		}
		if err != nil {
			// The parser's message can quote the document; its line
			// number cannot.
			if m := yamlErrorLine.FindStringSubmatch(err.Error()); m != nil {
				return nil, fmt.Errorf("YAML syntax error at line %s (details withheld, they may quote content)", m[1])
			}
			return nil, errSyntax
		}
		docs = append(docs, d)
	}
}

// yamlBody returns the top map of a document. An empty document is given an
// empty map, which is how it is written back.
func yamlBody(d *yaml.Node) (*yaml.Node, error) {
	if d.Kind != yaml.DocumentNode {
		return nil, errSyntax
	}
	if len(d.Content) == 0 {
		d.Content = []*yaml.Node{{Kind: yaml.MappingNode, Tag: "!!map"}}
	}
	b := d.Content[0]
	switch {
	case b.Kind == yaml.MappingNode:
		return b, nil
	case b.Kind == yaml.ScalarNode && b.ShortTag() == "!!null":
		empty := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map",
			HeadComment: b.HeadComment, LineComment: b.LineComment, FootComment: b.FootComment}
		d.Content[0] = empty
		return empty, nil
	case b.Kind == yaml.SequenceNode:
		return nil, errors.New("YAML documents that are lists are not supported")
	default:
		return nil, errors.New("YAML documents that are single values are not supported")
	}
}

// takeMetadata removes the `sops` entries of a top map, keeping their
// comments among the other entries, and returns the metadata when first is
// set. SOPS reads the metadata of the first document only but removes the
// key from all of them.
func (r *yamlReader) takeMetadata(m *yaml.Node, first bool) (map[string]any, error) {
	var meta *yaml.Node
	for i := 0; i+1 < len(m.Content); {
		k, v := m.Content[i], m.Content[i+1]
		if key, err := yamlKey(k); err != nil || key != metadataKey {
			i += 2
			continue
		}
		if first && meta != nil {
			return nil, errors.New("the document has more than one sops metadata key")
		}
		meta = v
		m.Content = append(m.Content[:i], m.Content[i+2:]...)
		keepComments(m, i, entryComments(k, v))
	}
	if !first || meta == nil {
		return nil, nil
	}
	tree, err := r.value(meta, false, false, 1)
	if err != nil {
		return nil, err
	}
	if tree.kind != kindMap {
		return nil, errors.New("the sops metadata key does not hold a map")
	}
	return tree.generic().(map[string]any), nil
}

// entryComments returns the comments of a map entry that SOPS reads at the
// level of the enclosing map, in its order.
func entryComments(k, v *yaml.Node) string {
	parts := []string{k.HeadComment, k.LineComment}
	if v.Kind == yaml.ScalarNode || v.Kind == yaml.AliasNode {
		parts = append(parts, v.HeadComment, v.LineComment, v.FootComment)
	}
	return joinComments(append(parts, k.FootComment)...)
}

// keepComments puts the comments of the entry removed at index i of m where
// they are read at the same point: after the previous entry, else before the
// next one, else at the end of the map.
func keepComments(m *yaml.Node, i int, comments string) {
	switch {
	case comments == "":
	case i >= 2:
		prev := m.Content[i-2]
		prev.FootComment = joinComments(prev.FootComment, comments)
	case i < len(m.Content):
		next := m.Content[i]
		next.HeadComment = joinComments(comments, next.HeadComment)
	default:
		m.FootComment = joinComments(comments, m.FootComment)
	}
}

func joinComments(parts ...string) string {
	kept := parts[:0:0]
	for _, p := range parts {
		if p != "" {
			kept = append(kept, p)
		}
	}
	return strings.Join(kept, "\n")
}

// document builds the tree of one document: its comments and its top map's
// at the top level.
func (r *yamlReader) document(d, body *yaml.Node) (*node, error) {
	root := &node{kind: kindMap}
	r.addComments(root, &d.HeadComment, true)
	r.addComments(root, &d.LineComment, true)
	if err := r.mapping(root, body, false, true, 1); err != nil {
		return nil, err
	}
	r.addComments(root, &d.FootComment, true)
	return root, nil
}

// mapping adds the entries of m, and its own comments unless the enclosing
// list has read them (ownRead), to parent. With write unset (an alias
// target, which is written back where it is defined) nothing is recorded
// for writing back.
func (r *yamlReader) mapping(parent *node, m *yaml.Node, ownRead, write bool, depth int) error {
	if !ownRead {
		r.addComments(parent, &m.HeadComment, write)
		r.addComments(parent, &m.LineComment, write)
	}
	seen := make(map[string]bool, len(m.Content)/2)
	for i := 0; i+1 < len(m.Content); i += 2 {
		key, err := yamlKey(m.Content[i])
		if err != nil {
			return err
		}
		if seen[key] {
			return fmt.Errorf("the key %q appears twice in a YAML map", safeKey(key))
		}
		seen[key] = true
		if err := r.entry(parent, key, m.Content[i], m.Content[i+1], write, depth); err != nil {
			return err
		}
	}
	if !ownRead {
		r.addComments(parent, &m.FootComment, write)
	}
	return nil
}

// entry adds one map entry to parent, with the key's comments and, for a
// scalar or alias value, the value's comments around it.
func (r *yamlReader) entry(parent *node, key string, k, v *yaml.Node, write bool, depth int) error {
	r.addComments(parent, &k.HeadComment, write)
	r.addComments(parent, &k.LineComment, write)
	scalar := v.Kind == yaml.ScalarNode || v.Kind == yaml.AliasNode
	if scalar {
		r.addComments(parent, &v.HeadComment, write)
		r.addComments(parent, &v.LineComment, write)
	}
	child, err := r.value(v, scalar, write, depth+1)
	if err != nil {
		return err
	}
	child.key = key
	parent.children = append(parent.children, child)
	if scalar {
		r.addComments(parent, &v.FootComment, write)
	}
	r.addComments(parent, &k.FootComment, write)
	return nil
}

func (r *yamlReader) sequence(list *node, s *yaml.Node, ownRead, write bool, depth int) error {
	if !ownRead {
		r.addComments(list, &s.HeadComment, write)
		r.addComments(list, &s.LineComment, write)
	}
	for _, item := range s.Content {
		r.addComments(list, &item.HeadComment, write)
		r.addComments(list, &item.LineComment, write)
		child, err := r.value(item, true, write, depth+1)
		if err != nil {
			return err
		}
		if leaf, ok := child.ref.(*yamlLeaf); ok {
			leaf.list = s
		}
		list.children = append(list.children, child)
		r.addComments(list, &item.FootComment, write)
	}
	if !ownRead {
		r.addComments(list, &s.FootComment, write)
	}
	return nil
}

// value builds the tree of a value node. An alias stands for a copy of its
// target, comments included.
func (r *yamlReader) value(v *yaml.Node, ownRead, write bool, depth int) (*node, error) {
	if depth > maxYAMLDepth {
		return nil, fmt.Errorf("the YAML document nests deeper than %d levels", maxYAMLDepth)
	}
	switch v.Kind {
	case yaml.ScalarNode:
		val, err := yamlScalar(v)
		if err != nil {
			return nil, err
		}
		n := &node{kind: kindValue, value: val}
		if write {
			n.ref = &yamlLeaf{node: v}
			r.leaves = append(r.leaves, n)
		}
		return n, nil
	case yaml.MappingNode:
		n := &node{kind: kindMap}
		return n, r.mapping(n, v, ownRead, write, depth)
	case yaml.SequenceNode:
		n := &node{kind: kindList}
		return n, r.sequence(n, v, ownRead, write, depth)
	case yaml.AliasNode:
		if v.Alias == nil {
			return nil, errSyntax
		}
		if r.aliases -= countYAMLNodes(v.Alias, r.aliases+1); r.aliases < 0 {
			return nil, errors.New("the YAML aliases expand to too many values")
		}
		return r.value(v.Alias, false, false, depth+1)
	default:
		return nil, errSyntax
	}
}

// countYAMLNodes counts the nodes under n, stopping past limit.
func countYAMLNodes(n *yaml.Node, limit int) int {
	count := 1
	for _, c := range n.Content {
		if count > limit {
			break
		}
		count += countYAMLNodes(c, limit-count)
	}
	return count
}

// addComments adds one comment node per non-empty line of a comment field.
// The text of a comment is the line without its leading '#'.
func (r *yamlReader) addComments(parent *node, field *string, write bool) {
	if *field == "" {
		return
	}
	lines := strings.Split(*field, "\n")
	for i, l := range lines {
		if l == "" {
			continue
		}
		c := &node{kind: kindComment, value: l[1:]}
		if write {
			c.ref = commentRef{field: field, lines: lines, line: i}
			r.comments = append(r.comments, c)
		}
		parent.children = append(parent.children, c)
	}
}

// yamlKey returns a map key, which must be a string.
func yamlKey(k *yaml.Node) (string, error) {
	if k.Kind == yaml.AliasNode && k.Alias != nil {
		k = k.Alias
	}
	if k.Kind == yaml.ScalarNode {
		switch k.ShortTag() {
		case "!!str", "!!merge":
			return k.Value, nil
		}
		var v any
		if err := k.Decode(&v); err == nil {
			if s, ok := v.(string); ok {
				return s, nil
			}
		}
	}
	return "", fmt.Errorf("a YAML map at line %d has a key that is not a string", k.Line)
}

// yamlScalar reads a scalar the way SOPS does, as the Go value the YAML
// library decodes it to.
func yamlScalar(v *yaml.Node) (any, error) {
	if v.ShortTag() == "!!str" {
		return v.Value, nil
	}
	var x any
	if err := v.Decode(&x); err != nil {
		return nil, fmt.Errorf("the YAML value at line %d cannot be read", v.Line)
	}
	return x, nil
}

// render writes the decrypted values and comments into the yaml.Node trees
// and encodes the stream.
func (r *yamlReader) render(docs []*yaml.Node) ([]byte, error) {
	listComments, err := r.writeLeaves()
	if err != nil {
		return nil, err
	}
	r.writeComments()
	for list, items := range listComments {
		uncommentItems(list, items)
	}
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(yamlIndent)
	for _, d := range docs {
		if err := enc.Encode(d); err != nil {
			return nil, errors.New("cannot write the decrypted YAML document")
		}
	}
	if err := enc.Close(); err != nil {
		return nil, errors.New("cannot write the decrypted YAML document")
	}
	return buf.Bytes(), nil
}

// writeLeaves sets the decrypted scalars and returns, by list, the items
// that decrypted to comments.
func (r *yamlReader) writeLeaves() (map[*yaml.Node]map[*yaml.Node]string, error) {
	listComments := map[*yaml.Node]map[*yaml.Node]string{}
	for _, n := range r.leaves {
		leaf := n.ref.(*yamlLeaf)
		switch {
		case !n.changed:
		case n.kind == kindComment:
			if listComments[leaf.list] == nil {
				listComments[leaf.list] = map[*yaml.Node]string{}
			}
			listComments[leaf.list][leaf.node] = commentString(n.plain)
		default:
			if err := setYAMLScalar(leaf.node, n.plain); err != nil {
				return nil, err
			}
		}
	}
	return listComments, nil
}

// writeComments sets the decrypted comment lines.
func (r *yamlReader) writeComments() {
	for _, c := range r.comments {
		if c.changed {
			ref := c.ref.(commentRef)
			ref.lines[ref.line] = commentLine(commentString(c.plain))
			*ref.field = strings.Join(ref.lines, "\n")
		}
	}
}

// commentLine writes comment text as a YAML comment, every line marked.
func commentLine(text string) string {
	return "#" + strings.ReplaceAll(text, "\n", "\n#")
}

// uncommentItems turns the items of a list that decrypted to comments back
// into comments, with their own comments, above the next item or, at the
// end of the list, below the last one.
func uncommentItems(list *yaml.Node, items map[*yaml.Node]string) {
	var (
		kept    []*yaml.Node
		pending []string
	)
	for _, item := range list.Content {
		text, isComment := items[item]
		if !isComment {
			item.HeadComment = joinComments(append(pending, item.HeadComment)...)
			pending = nil
			kept = append(kept, item)
			continue
		}
		pending = append(pending, item.HeadComment, item.LineComment, commentLine(text), item.FootComment)
	}
	list.Content = kept
	switch {
	case len(pending) == 0:
	case len(kept) > 0:
		last := kept[len(kept)-1]
		last.FootComment = joinComments(append([]string{last.FootComment}, pending...)...)
	default:
		list.HeadComment = joinComments(append([]string{list.HeadComment}, pending...)...)
	}
}

// setYAMLScalar replaces the content of a node by a decrypted value, with
// the tag and style the YAML library gives that value, keeping the node's
// comments and anchor.
func setYAMLScalar(target *yaml.Node, v any) error {
	if b, ok := v.([]byte); ok {
		v = string(b)
	}
	var fresh yaml.Node
	if err := fresh.Encode(v); err != nil {
		return errors.New("a decrypted value cannot be written as YAML")
	}
	target.Kind, target.Tag, target.Value, target.Style = fresh.Kind, fresh.Tag, fresh.Value, fresh.Style
	target.Content = fresh.Content
	return nil
}
