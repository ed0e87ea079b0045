package inventory

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

const (
	// separator joins the four parts of an ID.
	separator = "_"
	// colonInName is how a ":" in an object's name is written in an ID.
	colonInName = "__"
)

// ObjMetadata identifies an object independently of its API version.
type ObjMetadata struct {
	// Namespace is empty for cluster-scoped objects.
	Namespace string
	// Name is the object's metadata.name.
	Name string
	// Group is the API group, empty for the core group.
	Group string
	// Kind is the object's kind, such as Deployment.
	Kind string
}

// ObjMetadataOf returns the identity of obj, taken from its apiVersion,
// kind, namespace and name. The caller should clear the namespace of
// cluster-scoped objects first.
func ObjMetadataOf(obj *unstructured.Unstructured) ObjMetadata {
	gvk := obj.GroupVersionKind()
	return ObjMetadata{
		Namespace: obj.GetNamespace(),
		Name:      obj.GetName(),
		Group:     gvk.Group,
		Kind:      gvk.Kind,
	}
}

// ID returns the inventory ID, "<namespace>_<name>_<group>_<kind>".
func (o ObjMetadata) ID() string {
	name := strings.ReplaceAll(o.Name, ":", colonInName)
	return o.Namespace + separator + name + separator + o.Group + separator + o.Kind
}

// String returns the inventory ID.
func (o ObjMetadata) String() string {
	return o.ID()
}

// GroupKind returns the object's group and kind.
func (o ObjMetadata) GroupKind() schema.GroupKind {
	return schema.GroupKind{Group: o.Group, Kind: o.Kind}
}

// Subject returns the object as people read it in events and messages:
// "Kind/namespace/name", or "Kind/name" for cluster-scoped objects.
func (o ObjMetadata) Subject() string {
	if o.Namespace == "" {
		return o.Kind + "/" + o.Name
	}
	return o.Kind + "/" + o.Namespace + "/" + o.Name
}

// ParseObjMetadata parses an inventory ID following the rule in the package
// documentation. The name and the kind must not be empty.
func ParseObjMetadata(id string) (ObjMetadata, error) {
	first := strings.Index(id, separator)
	last := strings.LastIndex(id, separator)
	if first < 0 || last <= first {
		return ObjMetadata{}, fmt.Errorf("inventory ID %q: want <namespace>_<name>_<group>_<kind>", id)
	}
	groupStart := strings.LastIndex(id[:last], separator)
	if groupStart <= first {
		return ObjMetadata{}, fmt.Errorf("inventory ID %q: want <namespace>_<name>_<group>_<kind>", id)
	}
	o := ObjMetadata{
		Namespace: id[:first],
		Name:      strings.ReplaceAll(id[first+1:groupStart], colonInName, ":"),
		Group:     id[groupStart+1 : last],
		Kind:      id[last+1:],
	}
	if o.Name == "" || o.Kind == "" {
		return ObjMetadata{}, fmt.Errorf("inventory ID %q: the name and the kind must not be empty", id)
	}
	return o, nil
}

// Entry is one object in an inventory.
type Entry struct {
	// ID is "<namespace>_<name>_<group>_<kind>".
	ID string `json:"id"`
	// Version is the API version the object was applied with, such as v1.
	Version string `json:"v"`
}

// NewEntry returns the inventory entry of obj.
func NewEntry(obj *unstructured.Unstructured) Entry {
	return Entry{ID: ObjMetadataOf(obj).ID(), Version: obj.GroupVersionKind().Version}
}

// ObjMetadata parses the entry's ID.
func (e Entry) ObjMetadata() (ObjMetadata, error) {
	return ParseObjMetadata(e.ID)
}

// GroupVersionKind returns the group, version and kind of the entry.
func (e Entry) GroupVersionKind() (schema.GroupVersionKind, error) {
	o, err := e.ObjMetadata()
	if err != nil {
		return schema.GroupVersionKind{}, err
	}
	return schema.GroupVersionKind{Group: o.Group, Version: e.Version, Kind: o.Kind}, nil
}

// FromObjects returns the inventory of objs, sorted by ID, with one entry per
// ID: when an object appears twice the first one's version is kept.
func FromObjects(objs []*unstructured.Unstructured) []Entry {
	entries := make([]Entry, 0, len(objs))
	for _, obj := range objs {
		entries = append(entries, NewEntry(obj))
	}
	return normalize(entries)
}

// Diff returns the entries of old whose ID is not in new, in old's order:
// the objects a prune must delete. Versions are ignored, so an object that
// moved to a new API version is not stale.
func Diff(old, new []Entry) []Entry {
	keep := make(map[string]struct{}, len(new))
	for _, e := range new {
		keep[e.ID] = struct{}{}
	}
	var stale []Entry
	for _, e := range old {
		if _, ok := keep[e.ID]; !ok {
			stale = append(stale, e)
		}
	}
	return stale
}

// Merge returns the union of base and extra, sorted by ID. When both hold an
// ID, base's version wins: Merge(applied, survivors) keeps the version just
// applied.
func Merge(base, extra []Entry) []Entry {
	all := make([]Entry, 0, len(base)+len(extra))
	all = append(all, base...)
	all = append(all, extra...)
	return normalize(all)
}

// normalize sorts entries by ID and removes the later duplicates of an ID.
func normalize(entries []Entry) []Entry {
	seen := make(map[string]struct{}, len(entries))
	out := make([]Entry, 0, len(entries))
	for _, e := range entries {
		if _, ok := seen[e.ID]; ok {
			continue
		}
		seen[e.ID] = struct{}{}
		out = append(out, e)
	}
	slices.SortStableFunc(out, func(a, b Entry) int { return strings.Compare(a.ID, b.ID) })
	return out
}
