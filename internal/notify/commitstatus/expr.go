package commitstatus

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strings"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/ext"

	"github.com/windlass-dev/windlass/internal/notify"
	"github.com/windlass-dev/windlass/internal/redact"
)

// exprCostLimit bounds the work of one evaluation of commitStatusExpr,
// roughly in steps of the CEL interpreter: far more than building a key
// takes, and it stops a runaway comprehension.
const exprCostLimit uint64 = 100_000

// keyExpr is a compiled commitStatusExpr: a CEL expression that yields the
// status key. Its variables are:
//
//   - event: the event as it is on the wire (involvedObject, severity,
//     timestamp, message, reason, metadata, reportingController, ...);
//     metadata is always there, empty when the event has none;
//   - provider: metadata.name and metadata.namespace of the Provider, and
//     spec.type, spec.address (without credentials), spec.channel and
//     spec.username;
//   - alert: the Alert the message is posted for, when the caller gives it
//     with WithAlert, else an empty map.
//
// Besides the standard library it may use the strings extension
// (lowerAscii, replace, substring, ...).
type keyExpr struct {
	expr     string
	program  cel.Program
	provider map[string]any
}

func compileKeyExpr(expr string, cfg notify.Config) (*keyExpr, error) {
	env, err := cel.NewEnv(
		ext.Strings(),
		cel.Variable("event", cel.MapType(cel.StringType, cel.DynType)),
		cel.Variable("provider", cel.MapType(cel.StringType, cel.DynType)),
		cel.Variable("alert", cel.MapType(cel.StringType, cel.DynType)),
	)
	if err != nil {
		return nil, fmt.Errorf("commitStatusExpr: building the CEL environment: %w", err)
	}
	ast, iss := env.Compile(expr)
	if err := iss.Err(); err != nil {
		return nil, fmt.Errorf("invalid commitStatusExpr %q: %w", expr, err)
	}
	if out := ast.OutputType(); !out.IsExactType(types.StringType) && !out.IsExactType(types.DynType) {
		return nil, fmt.Errorf("invalid commitStatusExpr %q: it yields %s, not a string", expr, out)
	}
	program, err := env.Program(ast, cel.CostLimit(exprCostLimit), cel.InterruptCheckFrequency(100))
	if err != nil {
		return nil, fmt.Errorf("invalid commitStatusExpr %q: %w", expr, err)
	}
	return &keyExpr{expr: expr, program: program, provider: providerVar(cfg)}, nil
}

// providerVar is the provider variable of cfg.
func providerVar(cfg notify.Config) map[string]any {
	return map[string]any{
		"metadata": map[string]any{"name": cfg.ProviderName, "namespace": cfg.ProviderNamespace},
		"spec": map[string]any{
			"type":     cfg.Type,
			"address":  redact.URL(cfg.Address),
			"channel":  cfg.Channel,
			"username": cfg.Username,
		},
	}
}

// eval returns the key of m: the expression's result, which must be a
// non-empty string.
func (k *keyExpr) eval(ctx context.Context, m notify.Message) (string, error) {
	event, err := eventVar(m)
	if err != nil {
		return "", err
	}
	vars := map[string]any{"event": event, "provider": k.provider, "alert": alertFrom(ctx)}
	out, _, err := k.program.ContextEval(ctx, vars)
	if err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil {
			err = ctxErr
		}
		return "", fmt.Errorf("evaluating commitStatusExpr %q: %w", k.expr, err)
	}
	key, ok := out.Value().(string)
	if !ok {
		return "", fmt.Errorf("evaluating commitStatusExpr %q: the result is %s, not a string", k.expr, out.Type().TypeName())
	}
	if strings.TrimSpace(key) == "" {
		return "", fmt.Errorf("evaluating commitStatusExpr %q: the result is empty", k.expr)
	}
	return key, nil
}

// eventVar is m's event as its wire JSON, decoded into a map.
func eventVar(m notify.Message) (map[string]any, error) {
	raw, err := json.Marshal(m.Event)
	if err != nil {
		return nil, fmt.Errorf("encoding the event for commitStatusExpr: %w", err)
	}
	var event map[string]any
	if err := json.Unmarshal(raw, &event); err != nil {
		return nil, errors.New("decoding the event for commitStatusExpr")
	}
	if _, ok := event["metadata"]; !ok {
		event["metadata"] = map[string]any{}
	}
	return event, nil
}

// alertKey is the context key of the alert variable.
type alertKey struct{}

// WithAlert returns a copy of ctx that carries alert, the Alert a message
// is posted for as unstructured content (apiVersion, kind, metadata,
// spec): a Notifier of this package given that context evaluates
// commitStatusExpr with it as the variable alert. Without it, alert is an
// empty map.
func WithAlert(ctx context.Context, alert map[string]any) context.Context {
	return context.WithValue(ctx, alertKey{}, maps.Clone(alert))
}

func alertFrom(ctx context.Context) map[string]any {
	if alert, ok := ctx.Value(alertKey{}).(map[string]any); ok && alert != nil {
		return alert
	}
	return map[string]any{}
}
