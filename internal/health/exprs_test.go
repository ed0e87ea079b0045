package health

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/windlass-dev/windlass/internal/cel"
)

// phaseExpr is the custom health check of the tests: a Widget is current
// when its phase is Ready and failed when it is Error.
var phaseExpr = Expr{
	APIVersion: widgetV1,
	Kind:       widgetKind,
	Current:    "status.phase == 'Ready'",
	Failed:     "status.phase == 'Error'",
}

func TestValidateExprs(t *testing.T) {
	tests := []struct {
		name       string
		exprs      []Expr
		wantFields []string // the fields at fault, in order; none: valid
		wantCEL    bool     // the error wraps a *cel.CompileError
	}{
		{name: "none"},
		{name: "valid", exprs: []Expr{phaseExpr, {APIVersion: "example.com/*", Current: "true", InProgress: "false"}}},
		{name: "core group", exprs: []Expr{{APIVersion: "v1", Kind: "ConfigMap", Current: "has(metadata.name)"}}},
		{name: "optional access", exprs: []Expr{{APIVersion: widgetV1, Current: "status.?conditions.orValue([]).exists(c, c.type == 'Ready')"}}},
		{name: "syntax error", exprs: []Expr{phaseExpr, {APIVersion: widgetV1, Current: "status.phase =="}}, wantFields: []string{"current"}, wantCEL: true},
		{name: "undeclared variable", exprs: []Expr{{APIVersion: widgetV1, Current: "data.status.phase == 'Ready'"}}, wantFields: []string{"current"}, wantCEL: true},
		{name: "not a bool", exprs: []Expr{{APIVersion: widgetV1, Current: "true", Failed: "'Error'"}}, wantFields: []string{"failed"}, wantCEL: true},
		{name: "bad inProgress", exprs: []Expr{{APIVersion: widgetV1, Current: "true", InProgress: "status.("}}, wantFields: []string{"inProgress"}, wantCEL: true},
		{name: "missing current", exprs: []Expr{{APIVersion: widgetV1, Failed: "true"}}, wantFields: []string{"current"}, wantCEL: true},
		{name: "missing apiVersion", exprs: []Expr{{Kind: widgetKind, Current: "true"}}, wantFields: []string{"apiVersion"}},
		{name: "malformed apiVersion", exprs: []Expr{{APIVersion: "a/b/c", Current: "true"}}, wantFields: []string{"apiVersion"}},
		{name: "wildcard without group", exprs: []Expr{{APIVersion: "*", Current: "true"}}, wantFields: []string{"apiVersion"}},
		{name: "every error is reported", exprs: []Expr{{APIVersion: "", Current: "(", Failed: ")"}}, wantFields: []string{"apiVersion", "current", "failed"}, wantCEL: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			err := ValidateExprs(tt.exprs)
			if tt.wantFields == nil {
				g.Expect(err).NotTo(HaveOccurred())
				return
			}
			g.Expect(err).To(HaveOccurred())
			g.Expect(IsInvalidExpr(err)).To(BeTrue())
			g.Expect(cel.IsCompileError(err)).To(Equal(tt.wantCEL), err.Error())
			var fields []string
			for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
				var ee *ExprError
				g.Expect(errors.As(e, &ee)).To(BeTrue())
				fields = append(fields, ee.Field)
			}
			g.Expect(fields).To(Equal(tt.wantFields))

			// Check and Wait report the same error, before reading anything.
			_, checkErr := newChecker().Check(context.Background(), []ObjectRef{deploymentRef("default", "x")}, tt.exprs...)
			g.Expect(checkErr).To(MatchError(err.Error()))
		})
	}
}

func TestExprMatch(t *testing.T) {
	exprs := []Expr{
		{APIVersion: "example.com/*", Current: "true"},                  // 0: group, any kind
		{APIVersion: "example.com/v1", Kind: "Thing", Current: "true"},  // 1: exact
		{APIVersion: "example.com/*", Kind: "Thing", Current: "true"},   // 2: group and kind
		{APIVersion: "other.com/v2", Current: "true"},                   // 3: group, exact version
		{APIVersion: "other.com/v1", Current: "true"},                   // 4: group, other version
		{APIVersion: "v1", Kind: "ConfigMap", Current: "true"},          // 5: core
		{APIVersion: "example.com/v1", Kind: "Thing", Current: "false"}, // 6: duplicate of 1
	}
	set, err := compileExprs(exprs)
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	tests := []struct {
		gvk  schema.GroupVersionKind
		want int // -1: no match
	}{
		{gvk: schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Thing"}, want: 1},
		{gvk: schema.GroupVersionKind{Group: "example.com", Version: "v2", Kind: "Thing"}, want: 2},
		{gvk: schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Other"}, want: 0},
		{gvk: schema.GroupVersionKind{Group: "other.com", Version: "v1", Kind: "Any"}, want: 4},
		{gvk: schema.GroupVersionKind{Group: "other.com", Version: "v2", Kind: "Any"}, want: 3},
		{gvk: schema.GroupVersionKind{Group: "other.com", Version: "v3", Kind: "Any"}, want: 3},
		{gvk: schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, want: 5},
		{gvk: schema.GroupVersionKind{Version: "v1", Kind: "Secret"}, want: -1},
		{gvk: schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}, want: -1},
		{gvk: schema.GroupVersionKind{Group: "sub.example.com", Version: "v1", Kind: "Thing"}, want: -1},
	}
	for _, tt := range tests {
		t.Run(tt.gvk.String(), func(t *testing.T) {
			g := NewWithT(t)
			got := set.match(tt.gvk)
			g.Expect(slices.Index(set.rules, got)).To(Equal(tt.want))
		})
	}
	NewWithT(t).Expect((*exprSet)(nil).match(schema.GroupVersionKind{Kind: "Thing"})).To(BeNil())
}

// TestExprEvaluate evaluates expressions against objects without a
// cluster: the order of the expressions, the generation check and errors.
func TestExprEvaluate(t *testing.T) {
	// The cert-manager pattern: while a certificate is issued its Ready
	// condition is False, so inProgress must win over failed.
	issuing := Expr{
		APIVersion: "cert.example.com/v1",
		InProgress: "status.conditions.exists(c, c.type == 'Issuing' && c.status == 'True')",
		Failed:     "status.conditions.exists(c, c.type == 'Ready' && c.status == 'False')",
		Current:    "status.conditions.exists(c, c.type == 'Ready' && c.status == 'True')",
	}
	cond := func(typ, status string) any { return map[string]any{"type": typ, "status": status} }
	obj := func(generation int64, status map[string]any) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "cert.example.com/v1", "kind": "Certificate",
			"metadata": map[string]any{"name": "c", "namespace": "ns", "generation": generation},
		}}
		if status != nil {
			u.Object["status"] = status
		}
		return u
	}
	tests := []struct {
		name        string
		expr        Expr
		obj         *unstructured.Unstructured
		want        Status
		wantMessage string
	}{
		{name: "in progress wins over failed", expr: issuing, obj: obj(1, map[string]any{"conditions": []any{cond("Issuing", "True"), cond("Ready", "False")}}),
			want: InProgress, wantMessage: "inProgress expression is true"},
		{name: "failed wins over current", expr: Expr{APIVersion: "cert.example.com/v1", Current: "true", Failed: "true"}, obj: obj(1, map[string]any{}),
			want: Failed, wantMessage: "failed expression is true: true"},
		{name: "failed", expr: issuing, obj: obj(1, map[string]any{"conditions": []any{cond("Ready", "False")}}), want: Failed},
		{name: "current", expr: issuing, obj: obj(1, map[string]any{"conditions": []any{cond("Ready", "True")}}), want: Current,
			wantMessage: "current expression is true: status.conditions.exists"},
		{name: "none true", expr: issuing, obj: obj(1, map[string]any{"conditions": []any{}}), want: InProgress, wantMessage: "no health check expression is true"},
		{name: "stale generation", expr: issuing, obj: obj(2, map[string]any{"observedGeneration": int64(1), "conditions": []any{cond("Ready", "True")}}),
			want: InProgress, wantMessage: "status.observedGeneration 1 is not metadata.generation 2"},
		{name: "observed generation", expr: issuing, obj: obj(2, map[string]any{"observedGeneration": int64(2), "conditions": []any{cond("Ready", "True")}}), want: Current},
		{name: "no status yet", expr: issuing, obj: obj(1, nil), want: InProgress, wantMessage: "no such key: conditions"},
		{name: "no status yet, guarded", expr: Expr{APIVersion: "cert.example.com/v1", Current: "has(status.conditions)"}, obj: obj(1, nil), want: InProgress},
		{name: "top-level fields", expr: Expr{APIVersion: "cert.example.com/v1", Current: "kind == 'Certificate' && apiVersion.startsWith('cert.') && metadata.name == 'c' && spec == {}"},
			obj: obj(1, nil), want: Current},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			set, err := compileExprs([]Expr{tt.expr})
			g.Expect(err).NotTo(HaveOccurred())
			status, msg := set.rules[0].evaluate(context.Background(), tt.obj)
			g.Expect(status).To(Equal(tt.want), msg)
			g.Expect(msg).To(ContainSubstring(tt.wantMessage))
		})
	}
}

// TestCheckWithExprs computes the health of custom resources on the
// control plane with expressions instead of kstatus.
func TestCheckWithExprs(t *testing.T) {
	ns := env.CreateNamespace(t)
	ref := func(apiVersion, name string) ObjectRef {
		return ObjectRef{APIVersion: apiVersion, Kind: widgetKind, Namespace: ns, Name: name}
	}
	createWidget(t, widgetV1, ns, "ready", map[string]any{"phase": "Ready"})
	createWidget(t, widgetV1, ns, "error", map[string]any{"phase": "Error"})
	createWidget(t, widgetV1, ns, "pending", map[string]any{"phase": "Pending"})
	createWidget(t, widgetV1, ns, "new", nil)
	// kstatus would call this one Failed; the expression says Current.
	both := stalled("kstatus would fail this")
	both["phase"] = "Ready"
	createWidget(t, widgetV1, ns, "stalled-but-ready", both)
	createDeployment(t, ns, "stuck", 1)

	tests := []struct {
		name        string
		ref         ObjectRef
		exprs       []Expr
		want        Status
		wantMessage string
	}{
		{name: "ready", ref: ref(widgetV1, "ready"), exprs: []Expr{phaseExpr}, want: Current, wantMessage: "current expression is true: status.phase == 'Ready'"},
		{name: "error", ref: ref(widgetV1, "error"), exprs: []Expr{phaseExpr}, want: Failed, wantMessage: "failed expression is true: status.phase == 'Error'"},
		{name: "pending", ref: ref(widgetV1, "pending"), exprs: []Expr{phaseExpr}, want: InProgress, wantMessage: "no health check expression is true"},
		{name: "no status", ref: ref(widgetV1, "new"), exprs: []Expr{phaseExpr}, want: InProgress, wantMessage: "no such key: phase"},
		{name: "no status, kstatus", ref: ref(widgetV1, "new"), want: Current},
		{name: "expression replaces kstatus", ref: ref(widgetV1, "stalled-but-ready"), exprs: []Expr{phaseExpr}, want: Current},
		{name: "kstatus without expressions", ref: ref(widgetV1, "stalled-but-ready"), want: Failed, wantMessage: "kstatus would fail this"},
		{name: "expression for another kind", ref: ref(widgetV1, "stalled-but-ready"), exprs: []Expr{{APIVersion: widgetV1, Kind: "Gadget", Current: "true"}}, want: Failed},
		{name: "group wildcard", ref: ref(widgetV1, "error"), exprs: []Expr{{APIVersion: widgetGroup + "/*", Current: "status.phase == 'Ready'", Failed: "status.phase == 'Error'"}}, want: Failed},
		{name: "group-level match of another version", ref: ref(widgetV2, "ready"), exprs: []Expr{phaseExpr}, want: Current},
		{name: "kinds without expressions keep kstatus", ref: deploymentRef(ns, "stuck"), exprs: []Expr{phaseExpr}, want: InProgress, wantMessage: "Available: 0/1"},
	}
	checker := newChecker()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			g.Eventually(func(g Gomega) {
				res, err := checker.Check(context.Background(), []ObjectRef{tt.ref}, tt.exprs...)
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(res[0].Status).To(Equal(tt.want), res[0].Message)
				g.Expect(res[0].Message).To(ContainSubstring(tt.wantMessage))
			}).WithTimeout(30 * time.Second).WithPolling(100 * time.Millisecond).Should(Succeed())
		})
	}
}
