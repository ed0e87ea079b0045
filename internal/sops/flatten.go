package sops

import (
	"fmt"
	"strconv"
	"strings"
)

// Formats without nesting (dotenv, INI) store the metadata flattened: each
// leaf is one entry whose key is the path to the leaf, map keys introduced by
// "__map_" and list indices by "__list_", as in
// `key_groups__list_0__map_age__list_1__map_enc`. Dotenv entries also carry
// the "sops_" prefix, which the reader strips before unflattening.
const (
	flatMapSeparator  = "__map_"
	flatListSeparator = "__list_"
	// metadataPrefix starts the key of every dotenv metadata entry.
	metadataPrefix = metadataKey + "_"
)

// flatEntry is one flattened metadata entry.
type flatEntry struct {
	key, value string
}

// flatStep is one step of a flattened path: a map key or a list index.
type flatStep struct {
	name    string
	index   int
	isIndex bool
}

// flatTree collects the entries under one path while unflattening.
type flatTree struct {
	value  *string
	fields map[string]*flatTree
	items  map[int]*flatTree
}

// unflatten rebuilds the metadata map from flattened entries. Errors quote
// metadata keys, which are not secret, but never values.
func unflatten(entries []flatEntry) (map[string]any, error) {
	root := &flatTree{}
	for _, e := range entries {
		steps, err := splitFlatKey(e.key)
		if err != nil {
			return nil, fmt.Errorf("SOPS metadata entry %q: %w", safeKey(e.key), err)
		}
		if err := root.place(steps, e.value); err != nil {
			return nil, fmt.Errorf("SOPS metadata entry %q: %w", safeKey(e.key), err)
		}
	}
	v, err := root.build()
	if err != nil {
		return nil, fmt.Errorf("SOPS metadata: %w", err)
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("SOPS metadata: the entries do not form a map")
	}
	return m, nil
}

// splitFlatKey cuts a flattened key into its steps.
func splitFlatKey(key string) ([]flatStep, error) {
	first, rest := cutAtFlatSeparator(key)
	steps := []flatStep{{name: first}}
	for rest != "" {
		var isIndex bool
		if r, ok := strings.CutPrefix(rest, flatMapSeparator); ok {
			rest = r
		} else {
			rest, isIndex = strings.TrimPrefix(rest, flatListSeparator), true
		}
		var seg string
		seg, rest = cutAtFlatSeparator(rest)
		if !isIndex {
			steps = append(steps, flatStep{name: seg})
			continue
		}
		i, err := strconv.Atoi(seg)
		if err != nil || i < 0 {
			return nil, fmt.Errorf("invalid list index")
		}
		steps = append(steps, flatStep{index: i, isIndex: true})
	}
	return steps, nil
}

// cutAtFlatSeparator splits s before its first separator; rest is empty when
// there is none.
func cutAtFlatSeparator(s string) (head, rest string) {
	cut := -1
	for _, sep := range []string{flatMapSeparator, flatListSeparator} {
		if i := strings.Index(s, sep); i >= 0 && (cut < 0 || i < cut) {
			cut = i
		}
	}
	if cut < 0 {
		return s, ""
	}
	return s[:cut], s[cut:]
}

func (t *flatTree) place(steps []flatStep, value string) error {
	for _, s := range steps {
		t = t.child(s)
	}
	if t.value != nil {
		return fmt.Errorf("repeated entry")
	}
	t.value = &value
	return nil
}

func (t *flatTree) child(s flatStep) *flatTree {
	if s.isIndex {
		if t.items == nil {
			t.items = map[int]*flatTree{}
		}
		if t.items[s.index] == nil {
			t.items[s.index] = &flatTree{}
		}
		return t.items[s.index]
	}
	if t.fields == nil {
		t.fields = map[string]*flatTree{}
	}
	if t.fields[s.name] == nil {
		t.fields[s.name] = &flatTree{}
	}
	return t.fields[s.name]
}

// build converts the collected entries to map[string]any, []any and strings.
func (t *flatTree) build() (any, error) {
	kinds := 0
	for _, has := range []bool{t.value != nil, t.fields != nil, t.items != nil} {
		if has {
			kinds++
		}
	}
	switch {
	case kinds > 1:
		return nil, fmt.Errorf("an entry is both a value and a map or list")
	case t.value != nil:
		return *t.value, nil
	case t.items != nil:
		return t.buildList()
	}
	m := make(map[string]any, len(t.fields))
	for k, f := range t.fields {
		v, err := f.build()
		if err != nil {
			return nil, err
		}
		m[k] = v
	}
	return m, nil
}

func (t *flatTree) buildList() (any, error) {
	list := make([]any, len(t.items))
	for i := range list {
		item, ok := t.items[i]
		if !ok {
			return nil, fmt.Errorf("a list has missing items")
		}
		v, err := item.build()
		if err != nil {
			return nil, err
		}
		list[i] = v
	}
	return list, nil
}
