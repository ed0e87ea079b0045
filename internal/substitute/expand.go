package substitute

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// ErrMissingVariable is wrapped by the strict-mode error for a reference to
// an unset variable without a default.
var ErrMissingVariable = errors.New("variable is not set and has no default")

// maxDepth bounds the nesting of references inside defaults.
const maxDepth = 32

// expander expands the references in strings.
type expander struct {
	vars   map[string]string
	strict bool
}

// expand replaces every reference in s.
func (e *expander) expand(s string, depth int) (string, error) {
	if depth > maxDepth {
		return "", fmt.Errorf("references nested more than %d deep", maxDepth)
	}
	var b strings.Builder
	for {
		i := strings.Index(s, "${")
		if i < 0 {
			b.WriteString(s)
			return b.String(), nil
		}
		b.WriteString(s[:i])
		end := closingBrace(s, i+2)
		if end < 0 {
			b.WriteString(s[i:]) // unterminated: not a reference
			return b.String(), nil
		}
		out, ok, err := e.reference(s[i+2:end], depth)
		if err != nil {
			return "", err
		}
		if !ok {
			out = s[i : end+1]
		}
		b.WriteString(out)
		s = s[end+1:]
	}
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
// not start with a variable name, and the text is to be kept.
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
		out, err = e.orDefault(val, set && val != "", op[2:], depth)
	case strings.HasPrefix(op, "-"), strings.HasPrefix(op, "="):
		out, err = e.orDefault(val, set, op[1:], depth)
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

// value returns a variable's value, or the strict-mode error when unset.
func (e *expander) value(name, val string, set bool) (string, error) {
	if !set && e.strict {
		return "", fmt.Errorf("variable %q: %w", name, ErrMissingVariable)
	}
	return val, nil
}

func (e *expander) orDefault(val string, use bool, word string, depth int) (string, error) {
	if use {
		return val, nil
	}
	return e.expand(word, depth+1)
}

// replace handles /pattern/repl (first match) and //pattern/repl (all).
func (e *expander) replace(name, val string, set bool, arg string, depth int) (string, error) {
	all := strings.HasPrefix(arg, "/")
	if all {
		arg = arg[1:]
	}
	pattern, repl, _ := strings.Cut(arg, "/")
	v, err := e.value(name, val, set)
	if err != nil {
		return "", err
	}
	if pattern, err = e.expand(pattern, depth+1); err != nil {
		return "", err
	}
	if repl, err = e.expand(repl, depth+1); err != nil {
		return "", err
	}
	if pattern == "" {
		return v, nil
	}
	if all {
		return strings.ReplaceAll(v, pattern, repl), nil
	}
	return strings.Replace(v, pattern, repl, 1), nil
}

// substring handles :pos and :pos:len, counting characters.
func (e *expander) substring(name, val string, set bool, arg string) (string, error) {
	v, err := e.value(name, val, set)
	if err != nil {
		return "", err
	}
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
