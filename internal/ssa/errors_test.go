package ssa

import (
	"encoding/base64"
	"errors"
	"testing"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/windlass-dev/windlass/internal/inventory"
)

func TestNewObjectError(t *testing.T) {
	const token = "s3cr3t-t0ken-value"
	encoded := base64.StdEncoding.EncodeToString([]byte(token))
	secret := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Secret",
		"metadata":   map[string]any{"name": "creds", "namespace": "ns"},
		"data":       map[string]any{"token": encoded},
		"stringData": map[string]any{"other": "plain-text-secret"},
	}}
	secretID := inventory.ObjMetadata{Namespace: "ns", Name: "creds", Kind: "Secret"}
	cm := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "cfg", "namespace": "ns", "annotations": map[string]any{
			LastAppliedConfigAnnotation: `{"data":{"k":"v"}}`,
		}},
	}}
	cmID := inventory.ObjMetadata{Namespace: "ns", Name: "cfg", Kind: "ConfigMap"}
	secretGR := schema.GroupKind{Kind: "Secret"}

	tests := []struct {
		name     string
		id       inventory.ObjMetadata
		obj      *unstructured.Unstructured
		err      error
		contains []string
		excludes []string
	}{
		{
			name: "invalid value of a Secret is not quoted",
			id:   secretID, obj: secret,
			err: apierrors.NewInvalid(secretGR, "creds", field.ErrorList{
				field.Invalid(field.NewPath("data", "token"), token, "bad"),
			}),
			contains: []string{"Secret/ns/creds: Invalid: data.token: FieldValueInvalid"},
			excludes: []string{token, encoded},
		},
		{
			name: "forbidden cause keeps its detail",
			id:   secretID, obj: secret,
			err: apierrors.NewInvalid(secretGR, "creds", field.ErrorList{
				field.Forbidden(field.NewPath("data"), "field is immutable when `immutable` is set"),
			}),
			contains: []string{"Invalid: data: Forbidden: field is immutable"},
		},
		{
			name: "free text from a webhook is withheld for Secrets",
			id:   secretID, obj: secret,
			err:      apierrors.NewForbidden(schema.GroupResource{Resource: "secrets"}, "creds", errors.New("denied: token="+token)),
			contains: []string{"Forbidden (the server's message is withheld for Secrets)"},
			excludes: []string{token},
		},
		{
			name: "plain errors are scrubbed of values",
			id:   secretID, obj: secret,
			err:      errors.New("something about " + encoded + " and plain-text-secret"),
			contains: []string{"something about [redacted] and [redacted]"},
			excludes: []string{encoded, "plain-text-secret"},
		},
		{
			name: "other kinds keep the server message",
			id:   cmID, obj: cm,
			err: apierrors.NewInvalid(schema.GroupKind{Kind: "ConfigMap"}, "cfg", field.ErrorList{
				field.Invalid(field.NewPath("metadata", "name"), "cfg", "bad name"),
			}),
			contains: []string{`ConfigMap/ns/cfg: ConfigMap "cfg" is invalid: metadata.name: Invalid value: "cfg": bad name`},
		},
		{
			name: "last-applied configuration is never echoed",
			id:   cmID, obj: cm,
			err:      errors.New(`webhook says: {"data":{"k":"v"}}`),
			contains: []string{"webhook says: [redacted]"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			oe := newObjectError(tt.id, tt.obj, tt.err)
			for _, s := range tt.contains {
				g.Expect(oe.Error()).To(ContainSubstring(s))
			}
			for _, s := range tt.excludes {
				g.Expect(oe.Error()).NotTo(ContainSubstring(s))
			}
		})
	}
}

func TestErrorTypes(t *testing.T) {
	a := &ObjectError{Object: inventory.ObjMetadata{Namespace: "ns", Name: "a", Kind: "ConfigMap"}, Message: "bad"}
	b := &ObjectError{Object: inventory.ObjMetadata{Name: "b", Kind: "Namespace"}, Message: "worse"}
	survivor := inventory.Entry{ID: "ns_a__ConfigMap", Version: "v1"}
	tests := []struct {
		name      string
		err       error
		want      string
		survivors []inventory.Entry
	}{
		{name: "validation", err: &ValidationError{Failures: []*ObjectError{a, b}}, want: "dry-run failed: ConfigMap/ns/a: bad; Namespace/b: worse"},
		{name: "apply", err: &ApplyError{Failures: []*ObjectError{a}}, want: "apply failed: ConfigMap/ns/a: bad"},
		{name: "prune", err: &PruneError{Failures: []*ObjectError{a}, Survivors: []inventory.Entry{survivor}}, want: "prune failed: ConfigMap/ns/a: bad", survivors: []inventory.Entry{survivor}},
		{name: "wrapped prune", err: errors.Join(errors.New("x"), &PruneError{Failures: []*ObjectError{a}, Survivors: []inventory.Entry{survivor}}), want: "x\nprune failed: ConfigMap/ns/a: bad", survivors: []inventory.Entry{survivor}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(tt.err.Error()).To(Equal(tt.want))
			g.Expect(Survivors(tt.err)).To(Equal(tt.survivors))
		})
	}
}

func TestIsImmutableError(t *testing.T) {
	gk := schema.GroupKind{Kind: "Secret"}
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{name: "immutable secret", err: apierrors.NewInvalid(gk, "s", field.ErrorList{field.Forbidden(field.NewPath("data"), "field is immutable when `immutable` is set")}), want: true},
		{name: "cluster IP", err: apierrors.NewInvalid(gk, "s", field.ErrorList{field.Invalid(field.NewPath("spec", "clusterIPs").Index(0), "10.0.0.1", "may not change once set")}), want: true},
		{name: "other invalid", err: apierrors.NewInvalid(gk, "s", field.ErrorList{field.Required(field.NewPath("spec"), "")}), want: false},
		{name: "not invalid", err: apierrors.NewForbidden(schema.GroupResource{Resource: "secrets"}, "s", errors.New("field is immutable")), want: false},
		{name: "plain", err: errors.New("immutable"), want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			NewWithT(t).Expect(isImmutableError(tt.err)).To(Equal(tt.want))
		})
	}
}
