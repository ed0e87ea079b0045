package kubeconfig

import (
	"errors"
	"fmt"
	"strings"
)

// ErrRefused is matched, with errors.Is, by every error Parse returns
// because the kubeconfig asks for something the Policy does not allow.
var ErrRefused = errors.New("kubeconfig refused by policy")

// ErrMalformed is matched, with errors.Is, by every error Parse returns
// because the kubeconfig cannot be decoded or does not say how to reach a
// cluster.
var ErrMalformed = errors.New("malformed kubeconfig")

// Violation is one refused field of a kubeconfig entry.
type Violation struct {
	// Kind is the kind of entry: "user" or "cluster".
	Kind string
	// Name is the name of the entry in the kubeconfig.
	Name string
	// Field is the kubeconfig key that is refused, such as "tokenFile".
	Field string
	// Reason says why the field is refused.
	Reason string
}

// String returns the violation as "user 'admin': tokenFile is refused:
// only inline credentials are allowed".
func (v Violation) String() string {
	return fmt.Sprintf("%s '%s': %s is refused: %s", v.Kind, v.Name, v.Field, v.Reason)
}

// RefusedError is the error of a kubeconfig the Policy refuses. It lists
// every violation found, in a stable order, and never a field's value.
type RefusedError struct {
	// Violations are the refused fields, at least one.
	Violations []Violation
}

// Error joins the violations with "; ".
func (e *RefusedError) Error() string {
	parts := make([]string, len(e.Violations))
	for i, v := range e.Violations {
		parts[i] = v.String()
	}
	return "kubeconfig refused: " + strings.Join(parts, "; ")
}

// Is reports whether target is ErrRefused.
func (e *RefusedError) Is(target error) bool { return target == ErrRefused }

// MalformedError is the error of a kubeconfig that cannot be decoded, or
// whose current context does not lead to a usable cluster.
type MalformedError struct {
	// Reason describes the problem; it quotes no value of the kubeconfig.
	Reason string
}

// Error returns the reason, prefixed with "malformed kubeconfig: ".
func (e *MalformedError) Error() string { return "malformed kubeconfig: " + e.Reason }

// Is reports whether target is ErrMalformed.
func (e *MalformedError) Is(target error) bool { return target == ErrMalformed }

// malformed returns a *MalformedError with the formatted reason. Only
// names and constant text may be formatted in, never values.
func malformed(format string, args ...any) error {
	return &MalformedError{Reason: fmt.Sprintf(format, args...)}
}

// foreign returns a *MalformedError for an error of client-go, whose text
// may quote the kubeconfig, with everything from the first to the last
// quote character of that text cut out.
func foreign(context string, err error) error {
	return &MalformedError{Reason: context + ": " + scrub(err.Error())}
}

// maxErrorLen bounds the text kept from a foreign error.
const maxErrorLen = 300

// scrub removes quoted text from msg: decoders quote the input they
// complain about ("cannot decode !!str `...`", "unknown anchor '...'", no
// kind "..."), and a value with a quote of its own would end a quotation
// early, so the whole span from the first quote to the last one goes (to
// the end when there is a single quote).
func scrub(msg string) string {
	if i := strings.IndexAny(msg, "\"'`"); i >= 0 {
		rest := ""
		if j := strings.LastIndexAny(msg, "\"'`"); j > i {
			rest = msg[j+1:]
		}
		msg = msg[:i] + "'…'" + rest
	}
	if len(msg) > maxErrorLen {
		msg = strings.ToValidUTF8(msg[:maxErrorLen], "") + "…"
	}
	return msg
}
