package ssa

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
	"sigs.k8s.io/structured-merge-diff/v6/value"
)

// foreignFields returns the union of the fields that managers other than
// manager own in the main resource of live (subresources such as status are
// left out).
func foreignFields(live *unstructured.Unstructured, manager string) (*fieldpath.Set, error) {
	set := &fieldpath.Set{}
	for _, e := range managedEntries(live) {
		if e.Manager == manager || e.Subresource != "" {
			continue
		}
		s, err := e.fieldSet()
		if err != nil {
			return nil, fmt.Errorf("manager %q: %w", e.Manager, err)
		}
		if s != nil {
			set = set.Union(s)
		}
	}
	return set, nil
}

// withoutForeignFields returns a copy of desired without the fields that
// another field manager owns in live with a value other than the desired
// one. Fields another manager owns with the same value stay (applying them
// shares their ownership and changes nothing); fields nobody else owns stay.
// apiVersion, kind, name and namespace always stay.
func withoutForeignFields(desired, live *unstructured.Unstructured, manager string) (*unstructured.Unstructured, error) {
	foreign, err := foreignFields(live, manager)
	if err != nil {
		return nil, err
	}
	out := desired.DeepCopy()
	if foreign.Empty() {
		return out, nil
	}
	stripMap(out.Object, live.Object, foreign)
	out.SetAPIVersion(desired.GetAPIVersion())
	out.SetKind(desired.GetKind())
	out.SetName(desired.GetName())
	out.SetNamespace(desired.GetNamespace())
	return out, nil
}

// stripValue strips desired (a value in the applied object) against live
// (the value at the same place in the live object, or nil) and owned (the
// foreign fields below this place). It returns the value to keep.
func stripValue(desired, live any, owned *fieldpath.Set) any {
	switch d := desired.(type) {
	case map[string]any:
		stripMap(d, live, owned)
		return d
	case []any:
		return stripList(d, live, owned)
	default:
		return desired
	}
}

// stripMap deletes from desired the keys that are foreign leaves with
// another value, and descends into the keys that have foreign fields below.
func stripMap(desired map[string]any, live any, owned *fieldpath.Set) {
	liveMap, _ := live.(map[string]any)
	for k, dv := range desired {
		pe := fieldpath.PathElement{FieldName: &k}
		lv, inLive := liveMap[k]
		child, hasChild := owned.Children.Get(pe)
		switch {
		case hasChild:
			desired[k] = stripValue(dv, lv, child)
		case owned.Members.Has(pe):
			if !inLive || !equalValues(dv, lv) {
				delete(desired, k)
			}
		}
	}
}

// stripList drops the list items that are foreign leaves with another
// value, and strips the items that have foreign fields below. Items are
// matched to the field set by key (associative lists), by value (sets) or
// by index.
func stripList(desired []any, live any, owned *fieldpath.Set) []any {
	liveList, _ := live.([]any)
	out := make([]any, 0, len(desired))
	for i, item := range desired {
		pe, ok := matchElement(owned, item, i)
		if !ok {
			out = append(out, item)
			continue
		}
		liveItem, inLive := findItem(liveList, pe)
		child, hasChild := owned.Children.Get(pe)
		switch {
		case hasChild:
			out = append(out, stripValue(item, liveItem, child))
		case inLive && equalValues(item, liveItem):
			out = append(out, item)
		}
	}
	return out
}

// matchElement finds the path element of owned that names item.
func matchElement(owned *fieldpath.Set, item any, index int) (fieldpath.PathElement, bool) {
	var found fieldpath.PathElement
	ok := false
	try := func(pe fieldpath.PathElement) {
		if !ok && elementMatches(pe, item, index) {
			found, ok = pe, true
		}
	}
	owned.Children.Iterate(try)
	owned.Members.Iterate(try)
	return found, ok
}

// findItem returns the item of list that pe names.
func findItem(list []any, pe fieldpath.PathElement) (any, bool) {
	for i, item := range list {
		if elementMatches(pe, item, i) {
			return item, true
		}
	}
	return nil, false
}

// elementMatches reports whether the list element pe names item, the
// index-th item of its list.
func elementMatches(pe fieldpath.PathElement, item any, index int) bool {
	switch {
	case pe.Key != nil:
		m, ok := item.(map[string]any)
		if !ok {
			return false
		}
		for _, f := range *pe.Key {
			v, ok := m[f.Name]
			if !ok || !value.Equals(value.NewValueInterface(v), f.Value) {
				return false
			}
		}
		return true
	case pe.Value != nil:
		return value.Equals(value.NewValueInterface(item), *pe.Value)
	case pe.Index != nil:
		return *pe.Index == index
	}
	return false
}

// equalValues compares two JSON-like values, numbers by value.
func equalValues(a, b any) bool {
	return value.Equals(value.NewValueInterface(a), value.NewValueInterface(b))
}
