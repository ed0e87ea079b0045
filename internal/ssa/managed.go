package ssa

import (
	"bytes"
	"encoding/json"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
)

// managedEntry is one entry of an object's metadata.managedFields, read
// from its unstructured content as it is. Unstructured.GetManagedFields
// converts every entry by reflection, the fields of each encoded to JSON,
// for readers that look at one entry of three (a Deployment's apply, its
// controller's revision annotation and its controller's status); each
// watched object and each apply answer is read so.
type managedEntry struct {
	Manager, Operation, Subresource, APIVersion string
	// fields is the entry's fieldsV1 as decoded, nil when it has none.
	fields any
}

// managedEntries returns the entries of u's managed fields, in order. An
// item that is not an object is left out.
func managedEntries(u *unstructured.Unstructured) []managedEntry {
	found, _, _ := unstructured.NestedFieldNoCopy(u.Object, "metadata", "managedFields")
	items, _ := found.([]any)
	entries := make([]managedEntry, 0, len(items))
	for _, item := range items {
		fields, ok := item.(map[string]any)
		if !ok {
			continue
		}
		entries = append(entries, managedEntry{
			Manager:     stringField(fields, "manager"),
			Operation:   stringField(fields, "operation"),
			Subresource: stringField(fields, "subresource"),
			APIVersion:  stringField(fields, "apiVersion"),
			fields:      fields["fieldsV1"],
		})
	}
	return entries
}

func stringField(m map[string]any, key string) string {
	s, _ := m[key].(string)
	return s
}

// appliedEntry returns the managed-fields entry of manager's applies to the
// main resource, or nil.
func appliedEntry(u *unstructured.Unstructured, manager string) *managedEntry {
	for _, e := range managedEntries(u) {
		if e.Manager == manager && e.Operation == string(metav1.ManagedFieldsOperationApply) && e.Subresource == "" {
			return &e
		}
	}
	return nil
}

// fieldsJSON returns the entry's fields as JSON, nil when it has none.
func (e *managedEntry) fieldsJSON() ([]byte, error) {
	if e.fields == nil {
		return nil, nil
	}
	return json.Marshal(e.fields)
}

// fieldSet returns the set of fields the entry owns, nil when it has none.
func (e *managedEntry) fieldSet() (*fieldpath.Set, error) {
	raw, err := e.fieldsJSON()
	if err != nil || raw == nil {
		return nil, err
	}
	set := &fieldpath.Set{}
	if err := set.FromJSON(bytes.NewReader(raw)); err != nil {
		return nil, err
	}
	return set, nil
}
