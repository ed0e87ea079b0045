package cel

import (
	"context"
	"errors"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
)

func TestCompile(t *testing.T) {
	tests := []struct {
		name    string
		expr    string
		vars    []string
		wantErr string // empty: compiles
	}{
		{name: "comparison", expr: "data.status.phase == 'Ready'", vars: []string{DataVar}},
		{name: "two variables", expr: "dep.metadata.name != self.metadata.name", vars: []string{DepVar, SelfVar}},
		{name: "dynamic result", expr: "data.spec.enabled", vars: []string{DataVar}},
		{name: "optional field", expr: "data.?status.?phase.orValue('') == 'Ready'", vars: []string{DataVar}},
		{name: "strings extension", expr: "data.metadata.name.lowerAscii().startsWith('app')", vars: []string{DataVar}},
		{name: "macro", expr: "data.status.conditions.exists(c, c.type == 'Ready' && c.status == 'True')", vars: []string{DataVar}},
		{name: "top-level fields", expr: "status.phase == 'Ready' && metadata.generation > 0", vars: []string{"metadata", "status"}},
		{name: "syntax error", expr: "data.status.phase == ", vars: []string{DataVar}, wantErr: "Syntax error"},
		{name: "unbalanced", expr: "(data.status", vars: []string{DataVar}, wantErr: "Syntax error"},
		{name: "undeclared variable", expr: "obj.status.phase == 'Ready'", vars: []string{DataVar}, wantErr: "undeclared reference to 'obj'"},
		{name: "variable of another API", expr: "dep.status.ready", vars: []string{DataVar}, wantErr: "undeclared reference to 'dep'"},
		{name: "not a bool", expr: "1 + 2", vars: []string{DataVar}, wantErr: "yields int, not a bool"},
		{name: "string result", expr: "'Ready'", vars: []string{DataVar}, wantErr: "not a bool"},
		{name: "unknown function", expr: "data.frobnicate()", vars: []string{DataVar}, wantErr: "undeclared reference to 'frobnicate'"},
		{name: "empty", expr: "  ", vars: []string{DataVar}, wantErr: "empty"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			p, err := Compile(tt.expr, tt.vars)
			if tt.wantErr == "" {
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(p.String()).To(Equal(tt.expr))
				g.Expect(p.Vars()).To(Equal(tt.vars))
				return
			}
			g.Expect(err).To(HaveOccurred())
			g.Expect(err.Error()).To(ContainSubstring(tt.wantErr))
			var ce *CompileError
			g.Expect(errors.As(err, &ce)).To(BeTrue(), "error type %T", err)
			g.Expect(ce.Expr).To(Equal(tt.expr))
			g.Expect(IsCompileError(err)).To(BeTrue())
			g.Expect(IsCompileError(errors.Join(errors.New("context"), err))).To(BeTrue())
		})
	}
}

func TestIsCompileError(t *testing.T) {
	g := NewWithT(t)
	g.Expect(IsCompileError(nil)).To(BeFalse())
	g.Expect(IsCompileError(errors.New("plain"))).To(BeFalse())
	g.Expect(IsCompileError(&CompileError{Expr: "x", Err: errors.New("bad")})).To(BeTrue())
}

func TestEvalBool(t *testing.T) {
	ready := map[string]any{
		"metadata": map[string]any{"name": "App-1", "generation": int64(3)},
		"spec":     map[string]any{"enabled": true, "replicas": int64(2)},
		"status": map[string]any{
			"phase":              "Ready",
			"observedGeneration": int64(3),
			"conditions": []any{
				map[string]any{"type": "Ready", "status": "True"},
			},
			"ratio": 0.5,
		},
	}
	tests := []struct {
		name    string
		expr    string
		vars    []string
		in      map[string]any
		want    bool
		wantErr string
	}{
		{name: "phase matches", expr: "data.status.phase == 'Ready'", vars: []string{DataVar}, in: map[string]any{DataVar: ready}, want: true},
		{name: "phase differs", expr: "data.status.phase == 'Error'", vars: []string{DataVar}, in: map[string]any{DataVar: ready}, want: false},
		{name: "int64 fields", expr: "data.status.observedGeneration == data.metadata.generation && data.spec.replicas > 1", vars: []string{DataVar}, in: map[string]any{DataVar: ready}, want: true},
		{name: "float field", expr: "data.status.ratio < 1.0", vars: []string{DataVar}, in: map[string]any{DataVar: ready}, want: true},
		{name: "conditions", expr: "data.status.conditions.exists(c, c.type == 'Ready' && c.status == 'True')", vars: []string{DataVar}, in: map[string]any{DataVar: ready}, want: true},
		{name: "dynamic bool", expr: "data.spec.enabled", vars: []string{DataVar}, in: map[string]any{DataVar: ready}, want: true},
		{name: "strings extension", expr: "data.metadata.name.lowerAscii() == 'app-1'", vars: []string{DataVar}, in: map[string]any{DataVar: ready}, want: true},
		{name: "optional on missing field", expr: "data.?status.?missing.orValue('none') == 'none'", vars: []string{DataVar}, in: map[string]any{DataVar: ready}, want: true},
		{name: "has on missing field", expr: "has(data.status.missing)", vars: []string{DataVar}, in: map[string]any{DataVar: ready}, want: false},
		{name: "dep and self", expr: "dep.status.phase == 'Ready' && self.metadata.name == 'consumer'", vars: []string{DepVar, SelfVar},
			in: map[string]any{DepVar: ready, SelfVar: map[string]any{"metadata": map[string]any{"name": "consumer"}}}, want: true},
		{name: "missing key", expr: "data.status.missing == 'x'", vars: []string{DataVar}, in: map[string]any{DataVar: ready}, wantErr: "no such key: missing"},
		{name: "unset variable", expr: "data.status.phase == 'Ready'", vars: []string{DataVar}, in: nil, wantErr: "no such attribute"},
		{name: "dynamic non-bool result", expr: "data.status.phase", vars: []string{DataVar}, in: map[string]any{DataVar: ready}, wantErr: "not a bool"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			p, err := Compile(tt.expr, tt.vars)
			g.Expect(err).NotTo(HaveOccurred())
			got, err := p.EvalBool(context.Background(), tt.in)
			if tt.wantErr != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tt.wantErr)))
				g.Expect(IsCompileError(err)).To(BeFalse())
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got).To(Equal(tt.want))
		})
	}
}

// bigList returns data.items with n numbers.
func bigList(n int) map[string]any {
	items := make([]any, n)
	for i := range items {
		items[i] = int64(i)
	}
	return map[string]any{DataVar: map[string]any{"items": items}}
}

const quadratic = "data.items.all(x, data.items.all(y, x + y >= 0))"

func TestCostLimit(t *testing.T) {
	tests := []struct {
		name    string
		opts    []Option
		n       int
		wantErr bool
	}{
		{name: "within the default limit", n: 100},
		{name: "zero means the default limit", opts: []Option{WithCostLimit(0)}, n: 300},
		{name: "over a small limit", opts: []Option{WithCostLimit(1000)}, n: 100, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			p, err := Compile(quadratic, []string{DataVar}, tt.opts...)
			g.Expect(err).NotTo(HaveOccurred())
			got, err := p.EvalBool(context.Background(), bigList(tt.n))
			if tt.wantErr {
				g.Expect(err).To(MatchError(ContainSubstring("cost limit exceeded")))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got).To(BeTrue())
		})
	}
}

func TestEvalCanceled(t *testing.T) {
	g := NewWithT(t)
	p, err := Compile("data.items.all(x, x >= 0)", []string{DataVar}, WithCostLimit(1<<62))
	g.Expect(err).NotTo(HaveOccurred())
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = p.EvalBool(ctx, bigList(100000))
	g.Expect(err).To(MatchError(context.Canceled))
}

func TestConcurrentEval(t *testing.T) {
	g := NewWithT(t)
	p, err := Compile("data.status.phase == 'Ready'", []string{DataVar})
	g.Expect(err).NotTo(HaveOccurred())
	errs := make(chan error, 16)
	for i := range 16 {
		go func() {
			phase := "Ready"
			if i%2 == 1 {
				phase = "Pending"
			}
			got, err := p.EvalBool(context.Background(), map[string]any{DataVar: map[string]any{"status": map[string]any{"phase": phase}}})
			if err == nil && got != (i%2 == 0) {
				err = errors.New("wrong result for " + strings.ToLower(phase))
			}
			errs <- err
		}()
	}
	for range 16 {
		g.Expect(<-errs).NotTo(HaveOccurred())
	}
}
