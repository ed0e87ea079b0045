package ssa

import (
	"bytes"

	"k8s.io/apimachinery/pkg/api/equality"
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
	ra, errA := ea.fieldsJSON()
	rb, errB := eb.fieldsJSON()
	if errA != nil || errB != nil {
		return false
	}
	if ra == nil || rb == nil {
		return ra == nil && rb == nil
	}
	if bytes.Equal(ra, rb) {
		return true
	}
	sa, sb := &fieldpath.Set{}, &fieldpath.Set{}
	if sa.FromJSON(bytes.NewReader(ra)) != nil || sb.FromJSON(bytes.NewReader(rb)) != nil {
		return false
	}
	return sa.Equals(sb)
}
