package sops

import (
	"errors"
	"fmt"
	"strings"
)

// kind tells what a tree node holds.
type kind uint8

const (
	kindMap     kind = iota // entries in document order, each with a key
	kindList                // items in document order
	kindValue               // a scalar
	kindComment             // one comment line, without its comment marker
)

// node is one element of a document in the format-neutral form the walker
// decrypts: maps and lists of scalars, with comments interleaved where the
// format puts them. Each format reader builds this tree, keeping in ref what
// it needs to write the walked value back; the walker fills plain.
type node struct {
	kind     kind
	key      string // key in the enclosing map
	children []*node
	// value is the scalar as read (string, int, float64, bool, time.Time or
	// nil) or, for a comment, its text as read.
	value any
	// plain is the value after the walk: decrypted if it was encrypted, else
	// value. changed tells the two apart.
	plain   any
	changed bool
	ref     any
}

// generic converts a subtree to plain Go values (map[string]any, []any and
// scalars), leaving comments out. A repeated key keeps its last value.
func (n *node) generic() any {
	switch n.kind {
	case kindMap:
		m := make(map[string]any, len(n.children))
		for _, c := range n.children {
			if c.kind != kindComment {
				m[c.key] = c.generic()
			}
		}
		return m
	case kindList:
		l := make([]any, 0, len(n.children))
		for _, c := range n.children {
			if c.kind != kindComment {
				l = append(l, c.generic())
			}
		}
		return l
	default:
		return n.value
	}
}

// commentStack holds, for each enclosing collection of the node being
// walked, the comments read since the last value of that collection. The
// comment rules (encrypted_comment_regex, unencrypted_comment_regex) look at
// it. Comments are recorded as written in the document, encrypted or not.
type commentStack [][]string

// push returns the stack with a new, empty level for a nested collection.
// Levels below are shared with the caller, which never reads past its own
// length, so the caller's stack is not affected.
func (s commentStack) push() commentStack { return append(s, nil) }

func (s commentStack) add(text string) { s[len(s)-1] = append(s[len(s)-1], text) }

func (s commentStack) clearTop() { s[len(s)-1] = nil }

// walker decrypts a tree in place and computes its MAC.
type walker struct {
	cipher *valueCipher
	rules  *cryptRules
	mac    *docMAC
	// macOnlyEncrypted leaves values that are not encrypted out of the MAC.
	macOnlyEncrypted bool
	// listComments is set for formats with comments (YAML), where SOPS
	// writes an encrypted comment inside a list as a list item whose type
	// is comment; the item turns back into a comment.
	listComments bool
	// strayComment is the path of the first value that decrypted to a
	// comment. Such a value drops out of the MAC, so a file fails its MAC
	// check first; for an object it is reported after the walk.
	strayComment []string
}

func newWalker(c *valueCipher, meta *metadata, listComments bool) *walker {
	return &walker{
		cipher:           c,
		rules:            &meta.rules,
		mac:              newDocMAC(meta.macOnlyEncrypted),
		macOnlyEncrypted: meta.macOnlyEncrypted,
		listComments:     listComments,
	}
}

// walk decrypts every root (one per YAML document, one for other formats)
// in order.
func (w *walker) walk(roots []*node) error {
	for _, r := range roots {
		if err := w.collection(r, nil, nil); err != nil {
			return err
		}
	}
	return nil
}

func (w *walker) collection(n *node, path []string, stack commentStack) error {
	stack = stack.push()
	for _, c := range n.children {
		if c.kind == kindComment {
			stack.add(commentString(c.value))
			w.comment(c, path, stack)
			continue
		}
		p := path
		if n.kind == kindMap {
			p = append(path[:len(path):len(path)], c.key)
		}
		var err error
		if c.kind == kindValue {
			err = w.value(c, p, stack, n.kind == kindList)
		} else {
			err = w.collection(c, p, stack)
		}
		if err != nil {
			return err
		}
		stack.clearTop()
	}
	return nil
}

func commentString(v any) string {
	s, _ := v.(string)
	return s
}

// comment decrypts a comment if the rules say it is encrypted. A comment
// that does not decrypt is kept as written: SOPS did not always encrypt
// comments, and comments are not covered by the MAC either way.
func (w *walker) comment(c *node, path []string, stack commentStack) {
	text := commentString(c.value)
	c.plain = text
	if !w.rules.encrypts(path, stack, true) {
		return
	}
	v, err := w.cipher.decrypt(text, aadFor(path))
	if err != nil {
		return
	}
	switch v := v.(type) {
	case commentText:
		c.plain, c.changed = string(v), true
	case string:
		c.plain, c.changed = v, true
	}
}

// value decrypts one scalar if the rules say it is encrypted and adds it to
// the MAC. Nulls are neither encrypted nor hashed, and neither are comments
// stored as list items.
func (w *walker) value(c *node, path []string, stack commentStack, inList bool) error {
	c.plain = c.value
	if c.value == nil {
		return nil
	}
	encrypted := w.rules.encrypts(path, stack, false)
	if encrypted {
		s, ok := c.value.(string)
		if !ok {
			return valueError(path, errors.New("a value that should be encrypted is not an ENC[…] string"))
		}
		v, err := w.cipher.decrypt(s, aadFor(path))
		if err != nil {
			return valueError(path, err)
		}
		if text, ok := v.(commentText); ok {
			if inList && w.listComments {
				c.kind, c.plain, c.changed = kindComment, string(text), true
				return nil
			}
			if w.strayComment == nil {
				w.strayComment = append([]string{}, path...)
			}
			return nil
		}
		c.plain, c.changed = v, true
	}
	if encrypted || !w.macOnlyEncrypted {
		if err := w.mac.add(c.plain); err != nil {
			return valueError(path, err)
		}
	}
	return nil
}

// strayCommentError reports a value that decrypted to a comment.
func (w *walker) strayCommentError() error {
	if w.strayComment == nil {
		return nil
	}
	return valueError(w.strayComment, errors.New("the value decrypted to a comment (the type tag was altered)"))
}

// valueError names a value by its key path, never by its content.
func valueError(path []string, reason error) error {
	safe := make([]string, len(path))
	for i, k := range path {
		safe[i] = safeKey(k)
	}
	return fmt.Errorf("%w at %q: %v", ErrValueDecryption, strings.Join(safe, ":"), reason)
}

// ciphertextMarkers are parts of an ENC[…] value.
var ciphertextMarkers = []string{"ENC[", "AES256_GCM", "data:", ",iv:", ",tag:"}

// safeKey returns a key, or another public name read from the document (a
// recipient, a fingerprint), for an error message. Keys are in clear in a
// SOPS document and name values in errors, but a mangled line can make part
// of a ciphertext look like a key (a dotenv line that lost its `KEY=` is cut
// at the first '=' of the base64 padding); such a name is redacted.
func safeKey(k string) string {
	for _, m := range ciphertextMarkers {
		if strings.Contains(k, m) {
			return "(redacted: it looks like a ciphertext)"
		}
	}
	return k
}
