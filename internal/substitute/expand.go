package substitute

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// ErrMissingVariable is wrapped by the strict-mode error for a reference to
// an unset variable without a default.
var ErrMissingVariable = errors.New("variable is not set and has no default")

// ErrOutputTooLarge is matched by errors.Is for every *SizeError: a
// substitution that would produce more than MaxValueSize bytes in one value,
// or grow a document by more than MaxDocumentGrowth bytes; and for the error
// of Build.Node when a build would grow by more than MaxBuildGrowth bytes.
var ErrOutputTooLarge = errors.New("substitution output too large")

// MaxValueSize is the most bytes one substituted scalar (value or key) may
// hold. It is the size limit of a ConfigMap's or Secret's data, and etcd
// stores no object above 1.5 MiB, so a larger value could not be applied.
const MaxValueSize = 1 << 20

// MaxDocumentGrowth is the most bytes substitution may add to one document,
// over all its scalars. It is the API server's limit on a request body: a
// document grown by more could never be applied.
const MaxDocumentGrowth = 3 << 20

// maxDepth bounds the nesting of references inside defaults.
const maxDepth = 32

// The scopes of a SizeError.
const (
	scopeValue    = "per value"
	scopeDocument = "of growth per document"
)

// SizeError is the error for a substitution refused because its result
// would exceed a size limit. It names the variable and field being
// expanded, never a value, which may come from a Secret.
type SizeError struct {
	// Limit is the limit in bytes: MaxValueSize or MaxDocumentGrowth.
	Limit int
	// Document is true when the limit is MaxDocumentGrowth.
	Document bool
	// Variable is the name of the reference being expanded, or "" when
	// the limit was reached by the text around references.
	Variable string
	// Field is the path of the scalar in its document, keys as written in
	// the source, such as spec.containers[0].image; it is "" for an
	// expansion outside a document.
	Field string
	// Key is true when the scalar is a mapping key.
	Key bool
}

// Error describes the limit and where it was reached.
func (e *SizeError) Error() string {
	scope := scopeValue
	if e.Document {
		scope = scopeDocument
	}
	return fmt.Sprintf("%v: %s would exceed the limit of %d bytes %s", ErrOutputTooLarge, e.where(), e.Limit, scope)
}

// where names the variable and the field of the error.
func (e *SizeError) where() string {
	field := "the value"
	switch {
	case e.Field != "" && e.Key:
		field = "key " + e.Field
	case e.Field != "":
		field = "field " + e.Field
	case e.Key:
		field = "a key"
	}
	if e.Variable == "" {
		return field
	}
	return fmt.Sprintf("expanding ${%s} in %s", e.Variable, field)
}

// Is reports whether target is ErrOutputTooLarge.
func (e *SizeError) Is(target error) bool { return target == ErrOutputTooLarge }

// budget bounds the bytes an expansion holds: the partial results of every
// level of nesting together, each counted when it is about to be built, so
// that memory never grows much past the limit.
type budget struct {
	limit int  // the most bytes the expansion may hold; 0 means MaxValueSize
	held  int  // the bytes its partial results hold now
	bound int  // the limit reported in a SizeError; 0 means limit
	doc   bool // whether limit comes from the document's growth
}

// begin starts an expansion that may produce limit bytes, reporting bound
// when it would exceed them.
func (b *budget) begin(limit, bound int, doc bool) {
	*b = budget{limit: limit, bound: bound, doc: doc}
}

// hold reserves n more bytes for the expansion of variable name, or refuses
// them.
func (b *budget) hold(name string, n int) error {
	limit := b.limit
	if limit == 0 {
		limit = MaxValueSize
	}
	if n > limit-b.held {
		bound := b.bound
		if bound == 0 {
			bound = limit
		}
		return &SizeError{Limit: bound, Document: b.doc, Variable: name}
	}
	b.held += n
	return nil
}

// release returns n bytes of discarded partial results.
func (b *budget) release(n int) { b.held -= n }

// expander expands the references in strings.
type expander struct {
	vars   map[string]string
	strict bool
	budget
}

// expand replaces every reference in s. Every byte it writes is held
// against the budget first; the result stays held for the caller.
func (e *expander) expand(s string, depth int) (string, error) {
	if depth > maxDepth {
		return "", fmt.Errorf("references nested more than %d deep", maxDepth)
	}
	var b strings.Builder
	for {
		i := strings.Index(s, "${")
		end := -1
		if i >= 0 {
			end = closingBrace(s, i+2)
		}
		if end < 0 { // no reference left, or an unterminated one
			if err := e.write(&b, s); err != nil {
				return "", err
			}
			return b.String(), nil
		}
		if err := e.write(&b, s[:i]); err != nil {
			return "", err
		}
		out, ok, err := e.reference(s[i+2:end], depth)
		if err != nil {
			return "", err
		}
		if !ok {
			out = s[i : end+1]
			if err := e.hold("", len(out)); err != nil {
				return "", err
			}
		}
		b.WriteString(out) // held by reference or just above
		s = s[end+1:]
	}
}

// write appends literal text to b, if the budget allows it.
func (e *expander) write(b *strings.Builder, text string) error {
	if err := e.hold("", len(text)); err != nil {
		return err
	}
	b.WriteString(text)
	return nil
}

// closingBrace returns the index of the brace that closes the one opened
// just before start, counting nested braces, or -1.
func closingBrace(s string, start int) int {
	depth := 1
	for j := start; j < len(s); j++ {
		switch s[j] {
		case '{':
			depth++
		case '}':
			if depth--; depth == 0 {
				return j
			}
		}
	}
	return -1
}

// nameLen returns the length of the variable name at the start of s.
func nameLen(s string) int {
	for i := 0; i < len(s); i++ {
		c := s[i]
		alpha := c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
		if !alpha && (i == 0 || c < '0' || c > '9') {
			return i
		}
	}
	return len(s)
}

// reference expands the body of one ${...}. ok is false when the body does
// not start with a variable name, and the text is to be kept. The result is
// held against the budget.
func (e *expander) reference(body string, depth int) (out string, ok bool, err error) {
	n := nameLen(body)
	if n == 0 {
		return "", false, nil
	}
	name, op := body[:n], body[n:]
	val, set := e.vars[name]
	switch {
	case op == "":
		out, err = e.value(name, val, set)
	case strings.HasPrefix(op, ":-"), strings.HasPrefix(op, ":="):
		out, err = e.orDefault(name, val, set && val != "", op[2:], depth)
	case strings.HasPrefix(op, "-"), strings.HasPrefix(op, "="):
		out, err = e.orDefault(name, val, set, op[1:], depth)
	case strings.HasPrefix(op, "/"):
		out, err = e.replace(name, val, set, op[1:], depth)
	case strings.HasPrefix(op, ":"):
		out, err = e.substring(name, val, set, op[1:])
	default:
		err = fmt.Errorf("unsupported expression ${%s}", body)
	}
	if err != nil {
		return "", false, err
	}
	return out, true, nil
}

// lookup returns a variable's value, or the strict-mode error when unset.
func (e *expander) lookup(name, val string, set bool) (string, error) {
	if !set && e.strict {
		return "", fmt.Errorf("variable %q: %w", name, ErrMissingVariable)
	}
	return val, nil
}

// value returns a variable's value, held against the budget.
func (e *expander) value(name, val string, set bool) (string, error) {
	v, err := e.lookup(name, val, set)
	if err != nil {
		return "", err
	}
	return v, e.hold(name, len(v))
}

// orDefault returns the value when use is set, else the expanded default.
func (e *expander) orDefault(name, val string, use bool, word string, depth int) (string, error) {
	if use {
		return val, e.hold(name, len(val))
	}
	return e.expand(word, depth+1)
}

// replace handles /pattern/repl (first match) and //pattern/repl (all). The
// size of the result is held before it is built.
func (e *expander) replace(name, val string, set bool, arg string, depth int) (string, error) {
	all := strings.HasPrefix(arg, "/")
	if all {
		arg = arg[1:]
	}
	pattern, repl, _ := strings.Cut(arg, "/")
	v, err := e.lookup(name, val, set)
	if err != nil {
		return "", err
	}
	if pattern, err = e.expand(pattern, depth+1); err != nil {
		return "", err
	}
	if repl, err = e.expand(repl, depth+1); err != nil {
		return "", err
	}
	e.release(len(pattern) + len(repl))
	n := 0
	switch {
	case pattern == "":
	case all:
		n = strings.Count(v, pattern)
	case strings.Contains(v, pattern):
		n = 1
	}
	if err := e.hold(name, replacedLen(len(v), n, len(repl)-len(pattern))); err != nil {
		return "", err
	}
	if n == 0 {
		return v, nil
	}
	return strings.Replace(v, pattern, repl, n), nil
}

// replacedLen returns the length of a string of size bytes after n
// replacements that each add grow bytes, or math.MaxInt if that overflows.
func replacedLen(size, n, grow int) int {
	if grow > 0 && n > (math.MaxInt-size)/grow {
		return math.MaxInt
	}
	return size + n*grow
}

// substring handles :pos and :pos:len, counting characters. The result,
// no longer than the variable's value, is held once built.
func (e *expander) substring(name, val string, set bool, arg string) (string, error) {
	v, err := e.lookup(name, val, set)
	if err != nil {
		return "", err
	}
	out, err := cut(name, v, arg)
	if err != nil {
		return "", err
	}
	return out, e.hold(name, len(out))
}

// cut returns the characters of v that the :pos or :pos:len of ${name:arg}
// select.
func cut(name, v, arg string) (string, error) {
	posText, lenText, hasLen := strings.Cut(arg, ":")
	pos, err := strconv.Atoi(strings.TrimSpace(posText))
	if err != nil {
		return "", fmt.Errorf("${%s:%s}: offset %q is not an integer", name, arg, posText)
	}
	r := []rune(v)
	if pos < 0 {
		pos += len(r)
	}
	if pos < 0 || pos > len(r) {
		return "", nil
	}
	if !hasLen {
		return string(r[pos:]), nil
	}
	n, err := strconv.Atoi(strings.TrimSpace(lenText))
	if err != nil {
		return "", fmt.Errorf("${%s:%s}: length %q is not an integer", name, arg, lenText)
	}
	end := pos + n
	if n < 0 {
		end = len(r) + n
	}
	if end < pos {
		return "", fmt.Errorf("${%s:%s}: the length ends before the offset", name, arg)
	}
	return string(r[pos:min(end, len(r))]), nil
}
