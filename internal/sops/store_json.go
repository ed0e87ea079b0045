package sops

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// A SOPS JSON document is an object whose top-level "sops" member holds the
// metadata. The binary format is the same envelope with the file's content
// as the one string member "data".

// maxJSONDepth bounds the nesting of a JSON document. The token reader has
// no limit of its own and the tree is built recursively.
const maxJSONDepth = 1000

func parseJSONDocument(data []byte, binary bool) (*parsedDocument, error) {
	root, err := readJSON(data)
	if err != nil {
		return nil, err
	}
	meta, err := takeMetadata(root)
	if err != nil {
		return nil, err
	}
	doc := &parsedDocument{roots: []*node{root}, meta: meta}
	if binary {
		doc.render = func() ([]byte, error) { return binaryData(root) }
	} else {
		doc.render = func() ([]byte, error) { return writeJSON(root) }
	}
	return doc, nil
}

// takeMetadata removes the top-level "sops" entry of a map and returns it as
// plain Go values, or nil when there is none.
func takeMetadata(root *node) (map[string]any, error) {
	var meta *node
	kept := root.children[:0]
	for _, c := range root.children {
		if c.kind == kindComment || c.key != metadataKey {
			kept = append(kept, c)
			continue
		}
		if meta != nil {
			return nil, errors.New("the document has more than one sops metadata key")
		}
		meta = c
	}
	root.children = kept
	if meta == nil {
		return nil, nil
	}
	if meta.kind != kindMap {
		return nil, errors.New("the sops metadata key does not hold a map")
	}
	return meta.generic().(map[string]any), nil
}

// readJSON reads a JSON object into a tree, keeping the order of its members
// (and repeated members: SOPS keeps them too). Nothing but white space may
// follow the object.
func readJSON(data []byte) (*node, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	tok, err := dec.Token()
	if err != nil {
		return nil, errSyntax
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, errors.New("the document is not a JSON object")
	}
	root := &node{kind: kindMap}
	if err := readJSONObject(dec, root, 1); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("data follows the JSON object")
	}
	return root, nil
}

func readJSONObject(dec *json.Decoder, obj *node, depth int) error {
	for {
		tok, err := dec.Token()
		if err != nil {
			return errSyntax
		}
		if d, ok := tok.(json.Delim); ok && d == '}' {
			return nil
		}
		key, ok := tok.(string)
		if !ok {
			return errSyntax
		}
		child, err := readJSONValue(dec, depth)
		if err != nil {
			return err
		}
		child.key = key
		obj.children = append(obj.children, child)
	}
}

func readJSONArray(dec *json.Decoder, list *node, depth int) error {
	for {
		if !dec.More() {
			tok, err := dec.Token()
			if d, ok := tok.(json.Delim); err != nil || !ok || d != ']' {
				return errSyntax
			}
			return nil
		}
		child, err := readJSONValue(dec, depth)
		if err != nil {
			return err
		}
		list.children = append(list.children, child)
	}
}

func readJSONValue(dec *json.Decoder, depth int) (*node, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, errSyntax
	}
	d, isDelim := tok.(json.Delim)
	if !isDelim {
		v, err := jsonScalar(tok)
		return &node{kind: kindValue, value: v}, err
	}
	if depth >= maxJSONDepth {
		return nil, fmt.Errorf("the JSON document nests deeper than %d levels", maxJSONDepth)
	}
	switch d {
	case '{':
		n := &node{kind: kindMap}
		return n, readJSONObject(dec, n, depth+1)
	case '[':
		n := &node{kind: kindList}
		return n, readJSONArray(dec, n, depth+1)
	default:
		return nil, errSyntax
	}
}

// jsonScalar converts a scalar token: numbers become int when they are whole
// and fit in 64 bits, float64 otherwise.
func jsonScalar(tok json.Token) (any, error) {
	n, ok := tok.(json.Number)
	if !ok {
		return tok, nil
	}
	if i, err := n.Int64(); err == nil {
		return int(i), nil
	}
	f, err := n.Float64()
	if err != nil {
		return nil, errors.New("a JSON number is out of range")
	}
	return f, nil
}

// writeJSON writes the walked tree as JSON indented with tabs, followed by a
// newline.
func writeJSON(root *node) ([]byte, error) {
	var compact bytes.Buffer
	if err := writeJSONNode(&compact, root); err != nil {
		return nil, err
	}
	var out bytes.Buffer
	if err := json.Indent(&out, compact.Bytes(), "", "\t"); err != nil {
		return nil, errors.New("cannot indent the JSON document")
	}
	out.WriteByte('\n')
	return out.Bytes(), nil
}

func writeJSONNode(buf *bytes.Buffer, n *node) error {
	switch n.kind {
	case kindMap:
		return writeJSONCollection(buf, n, '{', '}')
	case kindList:
		return writeJSONCollection(buf, n, '[', ']')
	}
	b, err := json.Marshal(n.plain)
	if err != nil {
		return errors.New("a decrypted value cannot be written as JSON")
	}
	buf.Write(b)
	return nil
}

// writeJSONCollection writes a map or list, leaving comments out.
func writeJSONCollection(buf *bytes.Buffer, n *node, open, closing byte) error {
	buf.WriteByte(open)
	first := true
	for _, c := range n.children {
		if c.kind == kindComment {
			continue
		}
		if !first {
			buf.WriteByte(',')
		}
		first = false
		if n.kind == kindMap {
			k, _ := json.Marshal(c.key)
			buf.Write(k)
			buf.WriteByte(':')
		}
		if err := writeJSONNode(buf, c); err != nil {
			return err
		}
	}
	buf.WriteByte(closing)
	return nil
}

// binaryData returns the decrypted "data" member of a binary envelope.
func binaryData(root *node) ([]byte, error) {
	for _, c := range root.children {
		if c.kind != kindValue || c.key != "data" {
			continue
		}
		switch v := c.plain.(type) {
		case string:
			return []byte(v), nil
		case []byte:
			return v, nil
		}
		return nil, errors.New("the data member of the binary envelope is not a string")
	}
	return nil, errors.New("the binary envelope has no data member")
}
