package substitute

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// DisableKey is the annotation or label that, set to "disabled", turns
// substitution off for one object.
const DisableKey = "kustomize.toolkit.fluxcd.io/substitute"

// ErrInvalidName is wrapped by the error for a variable whose name does not
// match NamePattern.
var ErrInvalidName = errors.New("invalid variable name")

// ErrNotText is wrapped by the error for a substitution whose result is
// not UTF-8 text.
var ErrNotText = errors.New("the substituted value is not UTF-8 text")

// NamePattern is the pattern every variable name must match.
const NamePattern = `^[_[:alpha:]][_[:alpha:][:digit:]]*$`

var nameRE = regexp.MustCompile(NamePattern)

// Vars merges variable sources in order: a later source overrides an earlier
// one. Pass the substituteFrom sources in their order, then the inline
// substitute map last.
func Vars(sources ...map[string]string) map[string]string {
	out := map[string]string{}
	for _, src := range sources {
		maps.Copy(out, src)
	}
	return out
}

// ValidateVars returns an error naming every variable whose name does not
// match NamePattern.
func ValidateVars(vars map[string]string) error {
	var bad []string
	for _, name := range slices.Sorted(maps.Keys(vars)) {
		if !nameRE.MatchString(name) {
			bad = append(bad, fmt.Sprintf("%q", name))
		}
	}
	if len(bad) == 0 {
		return nil
	}
	return fmt.Errorf("%w %s: names must match %s", ErrInvalidName, strings.Join(bad, ", "), NamePattern)
}

// Disabled reports whether annotations or labels turn substitution off.
func Disabled(annotations, labels map[string]string) bool {
	return strings.EqualFold(annotations[DisableKey], "disabled") ||
		strings.EqualFold(labels[DisableKey], "disabled")
}

// Substitute replaces the references in every object, in place. Objects
// that opt out are skipped. See the package documentation for how values
// are typed. A value that would exceed MaxValueSize, or an object that
// would grow by more than MaxDocumentGrowth, is refused with a *SizeError.
func Substitute(objs []*unstructured.Unstructured, vars map[string]string, strict bool) error {
	if err := ValidateVars(vars); err != nil {
		return err
	}
	e := &expander{vars: vars, strict: strict}
	for _, obj := range objs {
		if Disabled(obj.GetAnnotations(), obj.GetLabels()) {
			continue
		}
		if err := e.object(obj); err != nil {
			return fmt.Errorf("%s: %w", objectID(obj.GetKind(), obj.GetNamespace(), obj.GetName()), err)
		}
	}
	return nil
}

// object substitutes one decoded object.
func (e *expander) object(obj *unstructured.Unstructured) error {
	var doc yaml.Node
	if err := doc.Encode(obj.Object); err != nil {
		return err
	}
	w := &walker{expander: e, kind: obj.GetKind()}
	changed, err := w.walk(&doc, nil, false)
	if err != nil || !changed {
		return err
	}
	var v any
	if err := doc.Decode(&v); err != nil {
		return err
	}
	j, err := json.Marshal(v)
	if err != nil {
		return err
	}
	res := &unstructured.Unstructured{}
	if err := res.UnmarshalJSON(j); err != nil {
		return fmt.Errorf("the result is not a valid object: %w", err)
	}
	obj.Object = res.Object
	return nil
}

// SubstituteYAML replaces the references in one YAML document (one object),
// keeping quoted scalars strings. A document that opts out, or holds no
// reference, is returned unchanged. A scalar that would exceed MaxValueSize,
// or a document that would grow by more than MaxDocumentGrowth, is refused
// with a *SizeError, before the oversized string is built.
func SubstituteYAML(doc []byte, vars map[string]string, strict bool) ([]byte, error) {
	b, err := NewBuild(vars, strict)
	if err != nil {
		return nil, err
	}
	var root yaml.Node
	if err := yaml.Unmarshal(doc, &root); err != nil {
		return nil, fmt.Errorf("parsing the document: %w", err)
	}
	changed, err := b.node(&root)
	if err != nil {
		return nil, err
	}
	if !changed {
		return doc, nil
	}
	out, err := yaml.Marshal(&root)
	if err == nil {
		var check yaml.Node
		err = yaml.Unmarshal(out, &check)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: the substituted document cannot be written as YAML: %w", nodeID(&root), err)
	}
	return out, nil
}

// walker substitutes the scalars of one document, which together may grow
// it by at most MaxDocumentGrowth bytes.
type walker struct {
	*expander
	kind  string
	grown int    // the bytes substitution has added to the document so far
	field []step // the path to the node being walked, for errors
}

// step is one step of a path: a key as written in the source or, when
// index is not -1, a sequence index.
type step struct {
	key   string
	index int
}

// walk substitutes every scalar below n; at is the path of keys to n ("[]"
// for a sequence item).
func (w *walker) walk(n *yaml.Node, at []string, key bool) (bool, error) {
	switch n.Kind {
	case yaml.ScalarNode:
		return w.scalar(n, key || stringField(w.kind, at), key)
	case yaml.MappingNode:
		return w.mapping(n, at)
	case yaml.DocumentNode:
		return w.items(n.Content, at, false)
	case yaml.SequenceNode:
		return w.items(n.Content, append(at, "[]"), true)
	}
	return false, nil // aliases are expanded where their anchor is
}

// mapping substitutes the keys and values of mapping n.
func (w *walker) mapping(n *yaml.Node, at []string) (bool, error) {
	changed := false
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		w.field = append(w.field, step{key: k.Value, index: -1})
		ck, err := w.walk(k, at, true)
		if err != nil {
			return false, err
		}
		cv, err := w.walk(v, append(at, k.Value), false)
		if err != nil {
			return false, err
		}
		w.field = w.field[:len(w.field)-1]
		changed = changed || ck || cv
	}
	return changed, nil
}

// items substitutes the nodes of a document or, indexed, of a sequence.
func (w *walker) items(nodes []*yaml.Node, at []string, indexed bool) (bool, error) {
	changed := false
	for i, c := range nodes {
		if indexed {
			w.field = append(w.field, step{index: i})
		}
		ch, err := w.walk(c, at, false)
		if err != nil {
			return false, err
		}
		if indexed {
			w.field = w.field[:len(w.field)-1]
		}
		changed = changed || ch
	}
	return changed, nil
}

// stringField reports whether the value at path is one Kubernetes defines
// as a string whatever it looks like: labels and annotations (of the object
// and of templates), ConfigMap and Secret data, and container env values.
func stringField(kind string, at []string) bool {
	n := len(at)
	switch {
	case n >= 3 && at[n-3] == "metadata" && (at[n-2] == "labels" || at[n-2] == "annotations"):
		return true
	case n >= 3 && at[n-3] == "env" && at[n-2] == "[]" && at[n-1] == "value":
		return true
	case n == 2 && (kind == "ConfigMap" || kind == "Secret"):
		return at[0] == "data" || at[0] == "stringData" || at[0] == "binaryData"
	}
	return false
}

// quotedStyles are the styles that make a scalar a string whatever it holds.
const quotedStyles = yaml.SingleQuotedStyle | yaml.DoubleQuotedStyle | yaml.LiteralStyle | yaml.FoldedStyle

// scalar substitutes one scalar and retypes it.
func (w *walker) scalar(n *yaml.Node, str, key bool) (bool, error) {
	if !strings.Contains(n.Value, "${") {
		return false, nil
	}
	out, err := w.expandScalar(n.Value)
	if err != nil {
		return false, w.locate(err, key)
	}
	if out == n.Value {
		return false, nil
	}
	if !utf8.ValidString(out) {
		// YAML and JSON hold text only; a binary value (from a Secret)
		// would be changed on its way to the API server.
		return false, fmt.Errorf("%s: %w", fieldPath(w.field), ErrNotText)
	}
	w.grown += max(len(out)-len(n.Value), 0)
	retype(n, out, str)
	return true, nil
}

// expandScalar expands the text of one scalar, which may produce at most
// MaxValueSize bytes, and no more than the document may still grow by.
func (w *walker) expandScalar(s string) (string, error) {
	if room := len(s) + MaxDocumentGrowth - w.grown; room < MaxValueSize {
		w.begin(room, MaxDocumentGrowth, true)
	} else {
		w.begin(MaxValueSize, MaxValueSize, false)
	}
	return w.expand(s, 0)
}

// locate adds the path of the scalar being walked to a SizeError.
func (w *walker) locate(err error, key bool) error {
	var se *SizeError
	if errors.As(err, &se) {
		se.Field, se.Key = fieldPath(w.field), key
	}
	return err
}

// fieldPath renders a path as spec.containers[0].image, quoting keys
// that are not plain words and shortening long ones.
func fieldPath(steps []step) string {
	var b strings.Builder
	for _, s := range steps {
		switch {
		case s.index >= 0:
			fmt.Fprintf(&b, "[%d]", s.index)
		case plainKeyRE.MatchString(s.key):
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			b.WriteString(s.key)
		default:
			fmt.Fprintf(&b, "[%q]", shorten(s.key, maxKeyLen))
		}
	}
	return b.String()
}

// maxKeyLen bounds the length of a key in an error.
const maxKeyLen = 64

var plainKeyRE = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// shorten cuts s to at most n bytes, marking the cut.
func shorten(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n-3] + "..."
}

// retype sets the tag and style of a scalar whose value became out; str
// tells that the field is always a string.
func retype(n *yaml.Node, out string, str bool) {
	n.Value = out
	switch {
	case n.Style&yaml.TaggedStyle != 0:
		// An explicit tag wins.
	case str || n.Style&quotedStyles != 0:
		n.Tag = "!!str"
	default:
		n.Tag = plainTag(out)
	}
	if n.Style&(yaml.LiteralStyle|yaml.FoldedStyle) != 0 && !blockSafe(out) {
		n.Style = yaml.DoubleQuotedStyle
	}
}

// blockSafe reports whether a literal or folded block can hold s as is;
// otherwise the value is written double-quoted, which can hold anything.
func blockSafe(s string) bool {
	if strings.ContainsAny(s, "\t\r") || strings.HasPrefix(s, " ") {
		return false
	}
	for _, line := range strings.Split(s, "\n") {
		if strings.HasSuffix(line, " ") {
			return false
		}
	}
	return true
}

var (
	intRE   = regexp.MustCompile(`^[-+]?(0|[1-9][0-9]*)$`)
	floatRE = regexp.MustCompile(`^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$`)
)

// plainTag types a value as YAML would a plain scalar, limited to the forms
// every YAML version reads the same way; numbers must also decode as such.
func plainTag(s string) string {
	switch s {
	case "true", "True", "TRUE", "false", "False", "FALSE":
		return "!!bool"
	case "null", "Null", "NULL", "~":
		return "!!null"
	}
	if !intRE.MatchString(s) && !floatRE.MatchString(s) {
		return "!!str"
	}
	var v any
	if yaml.Unmarshal([]byte(s), &v) != nil {
		return "!!str"
	}
	switch v.(type) {
	case int, int64:
		if intRE.MatchString(s) {
			return "!!int"
		}
	case float64:
		if !intRE.MatchString(s) {
			return "!!float"
		}
	}
	return "!!str"
}

// child returns the value of key in mapping n, or nil.
func child(n *yaml.Node, key string) *yaml.Node {
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1]
		}
	}
	return nil
}

// path follows keys from the top mapping of a document.
func path(doc *yaml.Node, keys ...string) *yaml.Node {
	n := doc
	if n.Kind == yaml.DocumentNode && len(n.Content) == 1 {
		n = n.Content[0]
	}
	for _, k := range keys {
		n = child(n, k)
	}
	return n
}

func scalarValue(n *yaml.Node) string {
	if n == nil || n.Kind != yaml.ScalarNode {
		return ""
	}
	return n.Value
}

// disabledNode reports whether a document opts out of substitution.
func disabledNode(doc *yaml.Node) bool {
	return strings.EqualFold(scalarValue(path(doc, "metadata", "annotations", DisableKey)), "disabled") ||
		strings.EqualFold(scalarValue(path(doc, "metadata", "labels", DisableKey)), "disabled")
}

// nodeID names the object a document holds, for errors.
func nodeID(doc *yaml.Node) string {
	return objectID(scalarValue(path(doc, "kind")),
		scalarValue(path(doc, "metadata", "namespace")),
		scalarValue(path(doc, "metadata", "name")))
}

// objectID renders kind/namespace/name, leaving out an empty namespace.
func objectID(kind, namespace, name string) string {
	if namespace == "" {
		return fmt.Sprintf("%s/%s", kind, name)
	}
	return fmt.Sprintf("%s/%s/%s", kind, namespace, name)
}
