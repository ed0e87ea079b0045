package cel

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	celgo "github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/ext"
)

// Names of the variables that the Windlass APIs declare.
const (
	// DepVar holds a dependency, in a dependsOn readyExpr.
	DepVar = "dep"
	// SelfVar holds the object that declares the expression, in a dependsOn
	// readyExpr.
	SelfVar = "self"
	// DataVar holds a whole object where an API passes one as a single
	// variable.
	DataVar = "data"
)

// DefaultCostLimit bounds the work of one evaluation when Compile is given
// no WithCostLimit option. A cost unit is roughly one step of the CEL
// interpreter; the limit stops expressions that run away over large lists
// (nested comprehensions) while leaving room for any reasonable check.
const DefaultCostLimit uint64 = 1_000_000

// CompileError reports an expression that does not compile: bad syntax, an
// undeclared variable, a result that cannot be a bool, or an empty
// expression. It is a configuration error: retrying does not fix it.
type CompileError struct {
	// Expr is the expression as written.
	Expr string
	// Err says what is wrong with it.
	Err error
}

// Error implements error.
func (e *CompileError) Error() string {
	return fmt.Sprintf("invalid CEL expression %q: %v", e.Expr, e.Err)
}

// Unwrap returns the underlying error.
func (e *CompileError) Unwrap() error { return e.Err }

// IsCompileError reports whether err is, or wraps, a *CompileError.
func IsCompileError(err error) bool {
	var ce *CompileError
	return errors.As(err, &ce)
}

// Option changes how Compile prepares an expression.
type Option func(*options)

type options struct {
	costLimit uint64
}

// WithCostLimit sets the cost limit of each evaluation; an evaluation that
// exceeds it fails. Zero means DefaultCostLimit.
func WithCostLimit(limit uint64) Option {
	return func(o *options) { o.costLimit = limit }
}

// Program is a compiled boolean expression. It is safe for concurrent use.
type Program struct {
	expr string
	vars []string
	prg  celgo.Program
}

// Compile compiles expr with the given variables declared as dynamic
// values. The expression must yield a bool (or a dynamic value, which is
// checked at evaluation). Besides the CEL standard library it may use
// optional field access (obj.?field.orValue(x)) and the strings, lists and
// sets extensions. Errors are *CompileError.
func Compile(expr string, vars []string, opts ...Option) (*Program, error) {
	o := options{costLimit: DefaultCostLimit}
	for _, opt := range opts {
		opt(&o)
	}
	if o.costLimit == 0 {
		o.costLimit = DefaultCostLimit
	}
	if strings.TrimSpace(expr) == "" {
		return nil, &CompileError{Expr: expr, Err: errors.New("the expression is empty")}
	}
	env, err := envFor(vars)
	if err != nil {
		return nil, err
	}
	ast, iss := env.Compile(expr)
	if err := iss.Err(); err != nil {
		return nil, &CompileError{Expr: expr, Err: err}
	}
	if out := ast.OutputType(); !out.IsExactType(types.BoolType) && !out.IsExactType(types.DynType) {
		return nil, &CompileError{Expr: expr, Err: fmt.Errorf("the expression yields %s, not a bool", out)}
	}
	prg, err := env.Program(ast,
		celgo.CostLimit(o.costLimit),
		celgo.InterruptCheckFrequency(100),
	)
	if err != nil {
		return nil, &CompileError{Expr: expr, Err: err}
	}
	return &Program{expr: expr, vars: slices.Clone(vars), prg: prg}, nil
}

// String returns the expression as written.
func (p *Program) String() string { return p.expr }

// Vars returns the names of the variables the expression was compiled with.
func (p *Program) Vars() []string { return slices.Clone(p.vars) }

// EvalBool evaluates the expression with the given variables (unstructured
// content: maps, slices, strings, numbers, bools, nil). Every declared
// variable should be set; one that is missing makes an evaluation that
// reads it fail. It fails when the result is not a bool, when the cost
// limit is exceeded, when the expression fails (a missing map key, for
// instance) or when ctx ends.
func (p *Program) EvalBool(ctx context.Context, vars map[string]any) (bool, error) {
	if vars == nil {
		vars = map[string]any{}
	}
	out, _, err := p.prg.ContextEval(ctx, vars)
	if err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil {
			return false, fmt.Errorf("evaluating %q: %w", p.expr, ctxErr)
		}
		return false, fmt.Errorf("evaluating %q: %w", p.expr, err)
	}
	b, ok := out.Value().(bool)
	if !ok {
		return false, fmt.Errorf("evaluating %q: the result is %s, not a bool", p.expr, out.Type().TypeName())
	}
	return b, nil
}

// envs caches one environment per set of variable names: building an
// environment costs far more than compiling one expression in it.
var envs sync.Map // string -> *celgo.Env

func envFor(vars []string) (*celgo.Env, error) {
	key := strings.Join(vars, "\x00")
	if env, ok := envs.Load(key); ok {
		return env.(*celgo.Env), nil
	}
	opts := []celgo.EnvOption{
		celgo.OptionalTypes(),
		ext.Strings(),
		ext.Lists(),
		ext.Sets(),
	}
	for _, v := range vars {
		opts = append(opts, celgo.Variable(v, celgo.DynType))
	}
	env, err := celgo.NewEnv(opts...)
	if err != nil {
		return nil, fmt.Errorf("building the CEL environment for %v: %w", vars, err)
	}
	actual, _ := envs.LoadOrStore(key, env)
	return actual.(*celgo.Env), nil
}
