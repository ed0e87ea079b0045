package ssa

import (
	"bytes"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
)

// volatileFields change without the object's content changing, or belong
// to controllers rather than to the applier; the comparison ignores them.
var volatileFields = [][]string{
	{"metadata", "managedFields"},
	{"metadata", "resourceVersion"},
	{"metadata", "generation"},
	{"status"},
}

// sameObject reports whether applying would change nothing: the dry-run
// result equals the live object once volatileFields are left out, and the
// field manager would own exactly the fields it owns now. The second test
// makes the first apply over an object that someone else created with the
// same content take ownership, so that later removals from the source take
// effect.
func sameObject(live, dryRun *unstructured.Unstructured, manager string) bool {
	if !equality.Semantic.DeepEqual(withoutVolatile(live), withoutVolatile(dryRun)) {
		return false
	}
	return sameOwnership(live, dryRun, manager)
}

func withoutVolatile(u *unstructured.Unstructured) map[string]any {
	c := u.DeepCopy().Object
	for _, f := range volatileFields {
		unstructured.RemoveNestedField(c, f...)
	}
	return c
}

// sameOwnership compares the fields that manager owns through apply in a
// and in b.
func sameOwnership(a, b *unstructured.Unstructured, manager string) bool {
	ea, eb := appliedEntry(a, manager), appliedEntry(b, manager)
	if ea == nil || eb == nil {
		return ea == nil && eb == nil
	}
	if ea.APIVersion != eb.APIVersion {
		return false
	}
	if ea.FieldsV1 == nil || eb.FieldsV1 == nil {
		return ea.FieldsV1 == nil && eb.FieldsV1 == nil
	}
	if bytes.Equal(ea.FieldsV1.Raw, eb.FieldsV1.Raw) {
		return true
	}
	sa, sb := &fieldpath.Set{}, &fieldpath.Set{}
	if sa.FromJSON(bytes.NewReader(ea.FieldsV1.Raw)) != nil || sb.FromJSON(bytes.NewReader(eb.FieldsV1.Raw)) != nil {
		return false
	}
	return sa.Equals(sb)
}

// appliedEntry returns the managed-fields entry of manager's applies to the
// main resource, or nil.
func appliedEntry(u *unstructured.Unstructured, manager string) *metav1.ManagedFieldsEntry {
	for _, e := range u.GetManagedFields() {
		if e.Manager == manager && e.Operation == metav1.ManagedFieldsOperationApply && e.Subresource == "" {
			return &e
		}
	}
	return nil
}
