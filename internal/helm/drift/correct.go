package drift

import (
	"context"
	"fmt"
	"strconv"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/windlass-dev/windlass/internal/ssa"
)

// Correct applies the drifted objects of report again with m, with forced
// ownership: missing objects are created from the manifest, changed ones
// get the manifest's values back, except in the fields the report's ignore
// rules name, which keep their live values. Objects that did not drift are
// not touched. The ChangeSet says what was written; on error it holds the
// objects handled before the failure.
func Correct(ctx context.Context, m *ssa.Manager, report *Report) (*ssa.ChangeSet, error) {
	if !report.Drifted() {
		return &ssa.ChangeSet{}, nil
	}
	objs := make([]*unstructured.Unstructured, 0, len(report.Entries))
	for _, e := range report.Entries {
		if e.Kind == Changed && e.live != nil && len(report.ignore) > 0 {
			objs = append(objs, keepIgnored(e.desired, e.live, report.ignore))
			continue
		}
		objs = append(objs, e.desired)
	}
	cs, err := m.ApplyAllStaged(ctx, objs, ssa.ApplyOptions{})
	if err != nil {
		return cs, fmt.Errorf("correcting drift: %w", err)
	}
	return cs, nil
}

// keepIgnored returns a copy of desired in which every field that the
// rules remove from it holds live's value instead, or is gone when live
// has none.
func keepIgnored(desired, live *unstructured.Unstructured, rules ssa.IgnoreRules) *unstructured.Unstructured {
	stripped := desired.DeepCopy()
	rules.Apply([]*unstructured.Unstructured{stripped})
	out := desired.DeepCopy()
	for _, path := range removedPaths(desired.Object, stripped.Object, nil) {
		if v, ok := lookup(live.Object, path); ok {
			set(out.Object, path, v)
		} else {
			remove(out.Object, path)
		}
	}
	return out
}

// removedPaths returns the paths of the fields of full that stripped, a
// copy of full with fields removed, lacks. Removal only deletes map keys,
// so list lengths are the same in both.
func removedPaths(full, stripped any, prefix []string) [][]string {
	var out [][]string
	switch f := full.(type) {
	case map[string]any:
		s, _ := stripped.(map[string]any)
		for k, v := range f {
			path := append(append([]string(nil), prefix...), k)
			sv, ok := s[k]
			if !ok {
				out = append(out, path)
				continue
			}
			out = append(out, removedPaths(v, sv, path)...)
		}
	case []any:
		s, _ := stripped.([]any)
		for i := range min(len(f), len(s)) {
			out = append(out, removedPaths(f[i], s[i], append(append([]string(nil), prefix...), strconv.Itoa(i)))...)
		}
	}
	return out
}

// lookup returns the value at path (map keys and list indexes) in node.
func lookup(node any, path []string) (any, bool) {
	for _, t := range path {
		switch n := node.(type) {
		case map[string]any:
			v, ok := n[t]
			if !ok {
				return nil, false
			}
			node = v
		case []any:
			i, err := strconv.Atoi(t)
			if err != nil || i < 0 || i >= len(n) {
				return nil, false
			}
			node = n[i]
		default:
			return nil, false
		}
	}
	return node, true
}

// set replaces the value at path in node with a copy of v, so that the
// object to apply shares nothing with the live one.
func set(node any, path []string, v any) {
	parent, ok := lookup(node, path[:len(path)-1])
	if !ok {
		return
	}
	last := path[len(path)-1]
	switch p := parent.(type) {
	case map[string]any:
		p[last] = runtime.DeepCopyJSONValue(v)
	case []any:
		if i, err := strconv.Atoi(last); err == nil && i >= 0 && i < len(p) {
			p[i] = runtime.DeepCopyJSONValue(v)
		}
	}
}

// remove deletes the map key at path in node.
func remove(node any, path []string) {
	parent, ok := lookup(node, path[:len(path)-1])
	if !ok {
		return
	}
	if p, ok := parent.(map[string]any); ok {
		delete(p, path[len(path)-1])
	}
}
