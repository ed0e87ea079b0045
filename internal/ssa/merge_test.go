package ssa

import (
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// fromYAML decodes one object.
func fromYAML(t *testing.T, doc string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
		t.Fatal(err)
	}
	return u
}

// managed returns a managed-fields entry.
func managed(manager string, op metav1.ManagedFieldsOperationType, fields string) metav1.ManagedFieldsEntry {
	return metav1.ManagedFieldsEntry{
		Manager: manager, Operation: op, APIVersion: "v1", FieldsType: "FieldsV1",
		FieldsV1: &metav1.FieldsV1{Raw: []byte(fields)},
	}
}

func TestWithoutForeignFields(t *testing.T) {
	tests := []struct {
		name    string
		desired string
		live    string
		fields  []metav1.ManagedFieldsEntry
		want    string
	}{
		{
			name:    "no other manager keeps everything",
			desired: `{apiVersion: v1, kind: ConfigMap, metadata: {name: c, namespace: ns}, data: {a: "1"}}`,
			live:    `{apiVersion: v1, kind: ConfigMap, metadata: {name: c, namespace: ns}, data: {a: "0"}}`,
			fields:  []metav1.ManagedFieldsEntry{managed(testFieldManager, metav1.ManagedFieldsOperationApply, `{"f:data":{"f:a":{}}}`)},
			want:    `{apiVersion: v1, kind: ConfigMap, metadata: {name: c, namespace: ns}, data: {a: "1"}}`,
		},
		{
			name:    "field edited by another manager is left to it",
			desired: `{apiVersion: v1, kind: ConfigMap, metadata: {name: c, namespace: ns}, data: {a: "1", b: "2"}}`,
			live:    `{apiVersion: v1, kind: ConfigMap, metadata: {name: c, namespace: ns}, data: {a: "edited", b: "1", c: "x"}}`,
			fields: []metav1.ManagedFieldsEntry{
				managed(testFieldManager, metav1.ManagedFieldsOperationApply, `{"f:data":{"f:b":{}}}`),
				managed("kubectl-edit", metav1.ManagedFieldsOperationUpdate, `{"f:data":{"f:a":{},"f:c":{}}}`),
			},
			want: `{apiVersion: v1, kind: ConfigMap, metadata: {name: c, namespace: ns}, data: {b: "2"}}`,
		},
		{
			name:    "field another manager owns with the same value is shared",
			desired: `{apiVersion: v1, kind: ConfigMap, metadata: {name: c, namespace: ns, labels: {team: a}}, data: {a: "1"}}`,
			live:    `{apiVersion: v1, kind: ConfigMap, metadata: {name: c, namespace: ns, labels: {team: a}}, data: {a: "1"}}`,
			fields:  []metav1.ManagedFieldsEntry{managed("kubectl-create", metav1.ManagedFieldsOperationUpdate, `{"f:metadata":{"f:labels":{".":{},"f:team":{}}},"f:data":{".":{},"f:a":{}}}`)},
			want:    `{apiVersion: v1, kind: ConfigMap, metadata: {name: c, namespace: ns, labels: {team: a}}, data: {a: "1"}}`,
		},
		{
			name: "keyed list items are matched by key",
			desired: `{apiVersion: apps/v1, kind: Deployment, metadata: {name: d, namespace: ns}, spec: {template: {spec: {containers: [
				{name: app, image: "app:2", args: ["--x"]},
				{name: sidecar, image: "side:2"}]}}}}`,
			live: `{apiVersion: apps/v1, kind: Deployment, metadata: {name: d, namespace: ns}, spec: {template: {spec: {containers: [
				{name: sidecar, image: "side:1"},
				{name: app, image: "app:hotfix", args: ["--x"]}]}}}}`,
			fields: []metav1.ManagedFieldsEntry{
				managed("kubectl-set", metav1.ManagedFieldsOperationUpdate, `{"f:spec":{"f:template":{"f:spec":{"f:containers":{"k:{\"name\":\"app\"}":{"f:image":{}}}}}}}`),
			},
			want: `{apiVersion: apps/v1, kind: Deployment, metadata: {name: d, namespace: ns}, spec: {template: {spec: {containers: [
				{name: app, args: ["--x"]},
				{name: sidecar, image: "side:2"}]}}}}`,
		},
		{
			name:    "set items owned by others with another value are dropped",
			desired: `{apiVersion: v1, kind: ConfigMap, metadata: {name: c, namespace: ns, finalizers: [mine, theirs]}}`,
			live:    `{apiVersion: v1, kind: ConfigMap, metadata: {name: c, namespace: ns, finalizers: [theirs]}}`,
			fields:  []metav1.ManagedFieldsEntry{managed("other", metav1.ManagedFieldsOperationUpdate, `{"f:metadata":{"f:finalizers":{".":{},"v:\"theirs\"":{},"v:\"gone\"":{}}}}`)},
			want:    `{apiVersion: v1, kind: ConfigMap, metadata: {name: c, namespace: ns, finalizers: [mine, theirs]}}`,
		},
		{
			name:    "atomic value owned by others with another value is dropped",
			desired: `{apiVersion: v1, kind: Service, metadata: {name: s, namespace: ns}, spec: {selector: {app: a}, ports: [{port: 80, protocol: TCP}]}}`,
			live:    `{apiVersion: v1, kind: Service, metadata: {name: s, namespace: ns}, spec: {selector: {app: b}, ports: [{port: 80, protocol: TCP}]}}`,
			fields: []metav1.ManagedFieldsEntry{
				managed("other", metav1.ManagedFieldsOperationUpdate, `{"f:spec":{"f:selector":{},"f:ports":{"k:{\"port\":80,\"protocol\":\"TCP\"}":{".":{},"f:port":{},"f:protocol":{}}}}}`),
			},
			want: `{apiVersion: v1, kind: Service, metadata: {name: s, namespace: ns}, spec: {ports: [{port: 80, protocol: TCP}]}}`,
		},
		{
			name:    "status subresource managers are not others",
			desired: `{apiVersion: v1, kind: ConfigMap, metadata: {name: c, namespace: ns}, data: {a: "1"}}`,
			live:    `{apiVersion: v1, kind: ConfigMap, metadata: {name: c, namespace: ns}, data: {a: "0"}}`,
			fields: []metav1.ManagedFieldsEntry{func() metav1.ManagedFieldsEntry {
				e := managed("controller", metav1.ManagedFieldsOperationUpdate, `{"f:data":{"f:a":{}}}`)
				e.Subresource = "status"
				return e
			}()},
			want: `{apiVersion: v1, kind: ConfigMap, metadata: {name: c, namespace: ns}, data: {a: "1"}}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			desired := fromYAML(t, tt.desired)
			live := fromYAML(t, tt.live)
			live.SetManagedFields(tt.fields)
			got, err := withoutForeignFields(desired, live, testFieldManager)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got.Object).To(Equal(fromYAML(t, tt.want).Object))
			g.Expect(desired.Object).To(Equal(fromYAML(t, tt.desired).Object), "the input is not modified")
		})
	}
}

func TestSameObject(t *testing.T) {
	base := `{apiVersion: v1, kind: ConfigMap, metadata: {name: c, namespace: ns, resourceVersion: "RV", generation: 1}, data: {a: "1"}}`
	mine := managed(testFieldManager, metav1.ManagedFieldsOperationApply, `{"f:data":{"f:a":{}}}`)
	mineMore := managed(testFieldManager, metav1.ManagedFieldsOperationApply, `{"f:data":{"f:a":{},"f:b":{}}}`)
	tests := []struct {
		name       string
		live, dry  string
		liveFields []metav1.ManagedFieldsEntry
		dryFields  []metav1.ManagedFieldsEntry
		want       bool
	}{
		{name: "identical", live: base, dry: base, liveFields: []metav1.ManagedFieldsEntry{mine}, dryFields: []metav1.ManagedFieldsEntry{mine}, want: true},
		{
			name:       "volatile fields differ",
			live:       base,
			dry:        `{apiVersion: v1, kind: ConfigMap, metadata: {name: c, namespace: ns, resourceVersion: "RV2", generation: 2}, data: {a: "1"}, status: {x: y}}`,
			liveFields: []metav1.ManagedFieldsEntry{mine}, dryFields: []metav1.ManagedFieldsEntry{mine},
			want: true,
		},
		{
			name: "data differs", live: base,
			dry:        `{apiVersion: v1, kind: ConfigMap, metadata: {name: c, namespace: ns}, data: {a: "2"}}`,
			liveFields: []metav1.ManagedFieldsEntry{mine}, dryFields: []metav1.ManagedFieldsEntry{mine},
			want: false,
		},
		{name: "ownership taken", live: base, dry: base, liveFields: nil, dryFields: []metav1.ManagedFieldsEntry{mine}, want: false},
		{name: "ownership grows", live: base, dry: base, liveFields: []metav1.ManagedFieldsEntry{mine}, dryFields: []metav1.ManagedFieldsEntry{mineMore}, want: false},
		{
			name: "other managers' entries do not matter", live: base, dry: base,
			liveFields: []metav1.ManagedFieldsEntry{mine, managed("x", metav1.ManagedFieldsOperationUpdate, `{"f:data":{}}`)},
			dryFields:  []metav1.ManagedFieldsEntry{mine},
			want:       true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			live, dry := fromYAML(t, tt.live), fromYAML(t, tt.dry)
			live.SetManagedFields(tt.liveFields)
			dry.SetManagedFields(tt.dryFields)
			NewWithT(t).Expect(sameObject(live, dry, testFieldManager)).To(Equal(tt.want))
		})
	}
}
