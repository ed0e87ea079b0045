package health

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/windlass-dev/windlass/internal/cel"
)

// Expr is one healthCheckExprs entry: CEL expressions that compute the
// health of the objects it matches, instead of kstatus. See the package
// documentation for matching and evaluation.
type Expr struct {
	// APIVersion selects the objects' group: "example.com/v1" or
	// "example.com/*". Required.
	APIVersion string
	// Kind selects the objects' kind; empty matches every kind of the
	// group.
	Kind string
	// Current is true when the object is healthy. Required.
	Current string
	// InProgress is true when the object is still being reconciled.
	// Optional.
	InProgress string
	// Failed is true when the object has failed. Optional.
	Failed string
}

// exprVars are the variables that health expressions see: the object's
// top-level fields.
var exprVars = []string{"apiVersion", "kind", "metadata", "spec", "status"}

// ExprError reports a healthCheckExprs entry that is invalid: an
// expression that does not compile (Err is then a *cel.CompileError), a
// missing current expression or a malformed apiVersion. It is a
// configuration error: retrying does not fix it.
type ExprError struct {
	// Index is the entry's position in the list.
	Index int
	// Field is the entry's field at fault: apiVersion, current,
	// inProgress or failed.
	Field string
	// Err says what is wrong.
	Err error
}

// Error implements error.
func (e *ExprError) Error() string {
	return fmt.Sprintf("healthCheckExprs[%d].%s: %v", e.Index, e.Field, e.Err)
}

// Unwrap returns the underlying error.
func (e *ExprError) Unwrap() error { return e.Err }

// IsInvalidExpr reports whether err is, or wraps, an *ExprError.
func IsInvalidExpr(err error) bool {
	var ee *ExprError
	return errors.As(err, &ee)
}

// ValidateExprs compiles every entry and returns the errors of those that
// are invalid (each an *ExprError), or nil. A controller calls it before it
// applies anything, to stall at once on a bad configuration.
func ValidateExprs(exprs []Expr) error {
	_, err := compileExprs(exprs)
	return err
}

// rule is a compiled Expr.
type rule struct {
	group      string
	version    string // "*" for any
	kind       string
	current    *cel.Program
	inProgress *cel.Program
	failed     *cel.Program
}

// exprSet is a compiled list of Expr; nil matches nothing.
type exprSet struct {
	rules []*rule
}

func compileExprs(exprs []Expr) (*exprSet, error) {
	if len(exprs) == 0 {
		return nil, nil
	}
	set := &exprSet{}
	var errs []error
	for i, e := range exprs {
		r, ruleErrs := compileRule(i, e)
		errs = append(errs, ruleErrs...)
		if r != nil {
			set.rules = append(set.rules, r)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return set, nil
}

// compileRule compiles one entry, or returns an *ExprError for each of its
// invalid fields.
func compileRule(i int, e Expr) (*rule, []error) {
	var errs []error
	r := &rule{kind: e.Kind}
	group, version, err := parseExprAPIVersion(e.APIVersion)
	if err != nil {
		errs = append(errs, &ExprError{Index: i, Field: "apiVersion", Err: err})
	}
	r.group, r.version = group, version
	for _, f := range []struct {
		field    string
		expr     string
		required bool
		dst      **cel.Program
	}{
		{"current", e.Current, true, &r.current},
		{"inProgress", e.InProgress, false, &r.inProgress},
		{"failed", e.Failed, false, &r.failed},
	} {
		if f.expr == "" && !f.required {
			continue
		}
		p, err := cel.Compile(f.expr, exprVars)
		if err != nil {
			errs = append(errs, &ExprError{Index: i, Field: f.field, Err: err})
			continue
		}
		*f.dst = p
	}
	if len(errs) > 0 {
		return nil, errs
	}
	return r, nil
}

// parseExprAPIVersion splits "group/version", "group/*" or "version" (the
// core group).
func parseExprAPIVersion(apiVersion string) (group, version string, err error) {
	if apiVersion == "" {
		return "", "", errors.New("apiVersion is required")
	}
	parts := strings.Split(apiVersion, "/")
	switch {
	case len(parts) == 1 && parts[0] != "*":
		return "", parts[0], nil
	case len(parts) == 2 && parts[0] != "" && parts[1] != "":
		return parts[0], parts[1], nil
	default:
		return "", "", fmt.Errorf("%q is not group/version or group/*", apiVersion)
	}
}

// match returns the rule for objects of gvk, or nil.
func (s *exprSet) match(gvk schema.GroupVersionKind) *rule {
	if s == nil {
		return nil
	}
	var best *rule
	bestScore := -1
	for _, r := range s.rules {
		if r.group != gvk.Group || (r.kind != "" && r.kind != gvk.Kind) {
			continue
		}
		score := 0
		if r.kind != "" {
			score += 4
		}
		switch r.version {
		case gvk.Version:
			score += 2
		case "*":
			score++
		}
		if score > bestScore {
			best, bestScore = r, score
		}
	}
	return best
}

// evaluate computes the health of obj from the rule's expressions.
func (r *rule) evaluate(ctx context.Context, obj *unstructured.Unstructured) (Status, string) {
	content := obj.UnstructuredContent()
	if observed, found, err := unstructured.NestedInt64(content, "status", "observedGeneration"); err == nil && found {
		if observed != obj.GetGeneration() {
			return InProgress, fmt.Sprintf("status.observedGeneration %d is not metadata.generation %d", observed, obj.GetGeneration())
		}
	}
	vars := make(map[string]any, len(exprVars))
	for _, name := range exprVars {
		if v, ok := content[name]; ok && v != nil {
			vars[name] = v
		} else {
			vars[name] = map[string]any{}
		}
	}
	for _, step := range []struct {
		name   string
		prg    *cel.Program
		status Status
	}{
		{"inProgress", r.inProgress, InProgress},
		{"failed", r.failed, Failed},
		{"current", r.current, Current},
	} {
		if step.prg == nil {
			continue
		}
		ok, err := step.prg.EvalBool(ctx, vars)
		if err != nil {
			return InProgress, err.Error()
		}
		if ok {
			return step.status, fmt.Sprintf("%s expression is true: %s", step.name, step.prg)
		}
	}
	return InProgress, "no health check expression is true yet"
}
