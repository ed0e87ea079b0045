package ssa

import (
	"encoding/json"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// TestManagedEntries reads the managed fields as GetManagedFields converts
// them: the same entries in the same order, the same fields.
func TestManagedEntries(t *testing.T) {
	tests := map[string]struct {
		extra string // YAML items appended to fingerprintedDeployment's managedFields
		want  []string
	}{
		"an apply and an update": {
			want: []string{"kustomize-controller/Apply/", "kube-controller-manager/Update/"},
		},
		"a status update and an entry without fields": {
			extra: statusEntry + `
  - manager: someone
    operation: Update
    apiVersion: apps/v1`,
			want: []string{"kustomize-controller/Apply/", "kube-controller-manager/Update/", "kube-controller-manager/Update/status", "someone/Update/"},
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			obj := deploymentWithEntries(t, tt.extra)

			entries := managedEntries(obj)
			converted := obj.GetManagedFields()
			g.Expect(converted).To(HaveLen(len(tt.want)))
			g.Expect(entries).To(HaveLen(len(tt.want)))
			for i, e := range entries {
				c := converted[i]
				g.Expect(e.Manager + "/" + e.Operation + "/" + e.Subresource).To(Equal(tt.want[i]))
				g.Expect(e.Manager).To(Equal(c.Manager))
				g.Expect(string(c.Operation)).To(Equal(e.Operation))
				g.Expect(e.Subresource).To(Equal(c.Subresource))
				g.Expect(e.APIVersion).To(Equal(c.APIVersion))
				fields, err := e.fieldsJSON()
				g.Expect(err).NotTo(HaveOccurred())
				if c.FieldsV1 == nil {
					g.Expect(fields).To(BeNil())
					continue
				}
				g.Expect(fields).To(MatchJSON(c.FieldsV1.Raw))
			}
		})
	}
}

func TestManagedEntries_SkipsWhatIsNotAnEntry(t *testing.T) {
	g := NewWithT(t)
	obj := deploymentWithEntries(t, "")
	items, _, _ := unstructured.NestedSlice(obj.Object, "metadata", "managedFields")
	items = append(items, "not an entry")
	g.Expect(unstructured.SetNestedSlice(obj.Object, items, "metadata", "managedFields")).To(Succeed())

	g.Expect(managedEntries(obj)).To(HaveLen(2))
	entry := appliedEntry(obj, "kustomize-controller")
	g.Expect(entry).NotTo(BeNil())
	set, err := entry.fieldSet()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(set.String()).To(ContainSubstring(".spec.replicas"))

	unstructured.RemoveNestedField(obj.Object, "metadata", "managedFields")
	g.Expect(managedEntries(obj)).To(BeEmpty())
	g.Expect(appliedEntry(obj, "kustomize-controller")).To(BeNil())
}

// statusEntry is the entry of a Deployment's controller's status writes.
const statusEntry = `
  - manager: kube-controller-manager
    operation: Update
    subresource: status
    apiVersion: apps/v1
    fieldsType: FieldsV1
    fieldsV1:
      f:status:
        f:conditions:
          .: {}
          k:{"type":"Available"}:
            .: {}
            f:lastTransitionTime: {}
            f:message: {}
            f:reason: {}
            f:status: {}
            f:type: {}
        f:observedGeneration: {}
        f:replicas: {}`

// deploymentWithEntries returns fingerprintedDeployment with the managed
// fields of extra appended.
func deploymentWithEntries(t testing.TB, extra string) *unstructured.Unstructured {
	t.Helper()
	obj := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(fingerprintedDeployment), &obj.Object); err != nil {
		t.Fatal(err)
	}
	if extra == "" {
		return obj
	}
	var more []any
	if err := yaml.Unmarshal([]byte(extra[1:]), &more); err != nil {
		t.Fatal(err)
	}
	items, _, _ := unstructured.NestedSlice(obj.Object, "metadata", "managedFields")
	if err := unstructured.SetNestedSlice(obj.Object, append(items, more...), "metadata", "managedFields"); err != nil {
		t.Fatal(err)
	}
	return obj
}

// BenchmarkFingerprintAs fingerprints a Deployment whose managed fields
// hold the apply, the controller's annotation and its status, as each
// watched Deployment is.
func BenchmarkFingerprintAs(b *testing.B) {
	obj := deploymentWithEntries(b, statusEntry)
	// As a watch delivers it: decoded from JSON.
	data, err := json.Marshal(obj.Object)
	if err != nil {
		b.Fatal(err)
	}
	if err := json.Unmarshal(data, &obj.Object); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if FingerprintAs(obj, "kustomize-controller") == "" {
			b.Fatal("no fingerprint")
		}
	}
}
