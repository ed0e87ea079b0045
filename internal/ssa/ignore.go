package ssa

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
)

// IgnoreRule names fields that are neither applied nor reverted (a
// Kustomization's spec.ignore, a HelmRelease's drift ignore rules): the
// cluster's values of those fields stay as they are.
type IgnoreRule struct {
	// Paths are JSON pointers (RFC 6901) to the fields.
	Paths []string
	// Target selects the objects the rule applies to; nil selects all.
	Target *Selector
}

// Selector selects objects like a kustomize target: group, version and
// kind exactly, name and namespace as anchored regular expressions, labels
// and annotations by selector.
type Selector struct {
	Group, Version, Kind, Name, Namespace, LabelSelector, AnnotationSelector string
}

// IgnoreRules are compiled IgnoreRules.
type IgnoreRules []ignoreRule

// ignoreRule is a compiled IgnoreRule.
type ignoreRule struct {
	paths  [][]string
	target *objectSelector
}

// objectSelector is a compiled Selector.
type objectSelector struct {
	group, version, kind string
	name, namespace      *regexp.Regexp
	labels, annotations  labels.Selector
}

// CompileIgnoreRules checks and compiles rules; the error of an invalid
// rule names its index.
func CompileIgnoreRules(rules []IgnoreRule) (IgnoreRules, error) {
	out := make(IgnoreRules, 0, len(rules))
	for i, r := range rules {
		var rule ignoreRule
		for _, p := range r.Paths {
			tokens, err := parsePointer(p)
			if err != nil {
				return nil, fmt.Errorf("ignore[%d]: %w", i, err)
			}
			rule.paths = append(rule.paths, tokens)
		}
		if r.Target != nil {
			sel, err := compileSelector(*r.Target)
			if err != nil {
				return nil, fmt.Errorf("ignore[%d].target: %w", i, err)
			}
			rule.target = sel
		}
		out = append(out, rule)
	}
	return out, nil
}

// parsePointer splits a JSON pointer (RFC 6901) into its tokens.
func parsePointer(p string) ([]string, error) {
	if p == "" || !strings.HasPrefix(p, "/") {
		return nil, fmt.Errorf("invalid JSON pointer '%s': it must start with '/'", p)
	}
	tokens := strings.Split(p[1:], "/")
	for i, t := range tokens {
		tokens[i] = strings.ReplaceAll(strings.ReplaceAll(t, "~1", "/"), "~0", "~")
	}
	return tokens, nil
}

func compileSelector(s Selector) (*objectSelector, error) {
	sel := &objectSelector{group: s.Group, version: s.Version, kind: s.Kind}
	var err error
	if sel.name, err = anchoredRegexp(s.Name); err != nil {
		return nil, fmt.Errorf("name: %w", err)
	}
	if sel.namespace, err = anchoredRegexp(s.Namespace); err != nil {
		return nil, fmt.Errorf("namespace: %w", err)
	}
	if s.LabelSelector != "" {
		if sel.labels, err = labels.Parse(s.LabelSelector); err != nil {
			return nil, fmt.Errorf("labelSelector: %w", err)
		}
	}
	if s.AnnotationSelector != "" {
		if sel.annotations, err = labels.Parse(s.AnnotationSelector); err != nil {
			return nil, fmt.Errorf("annotationSelector: %w", err)
		}
	}
	return sel, nil
}

func anchoredRegexp(expr string) (*regexp.Regexp, error) {
	if expr == "" {
		return nil, nil
	}
	return regexp.Compile("^(?:" + expr + ")$")
}

// matches reports whether the selector selects obj; a nil selector selects
// every object.
func (s *objectSelector) matches(obj *unstructured.Unstructured) bool {
	if s == nil {
		return true
	}
	gvk := obj.GroupVersionKind()
	switch {
	case s.group != "" && s.group != gvk.Group,
		s.version != "" && s.version != gvk.Version,
		s.kind != "" && s.kind != gvk.Kind,
		s.name != nil && !s.name.MatchString(obj.GetName()),
		s.namespace != nil && !s.namespace.MatchString(obj.GetNamespace()),
		s.labels != nil && !s.labels.Matches(labels.Set(obj.GetLabels())),
		s.annotations != nil && !s.annotations.Matches(labels.Set(obj.GetAnnotations())):
		return false
	}
	return true
}

// Apply removes the ignored fields from the objects to apply, so that the
// cluster's values of those fields are neither applied nor reverted.
func (rules IgnoreRules) Apply(objs []*unstructured.Unstructured) {
	for _, obj := range objs {
		for _, rule := range rules {
			if !rule.target.matches(obj) {
				continue
			}
			for _, tokens := range rule.paths {
				removePath(obj.Object, tokens)
			}
		}
	}
}

// removePath deletes the field at tokens from a decoded JSON value. A path
// that does not exist, or that names a whole list item, is left alone.
func removePath(node any, tokens []string) {
	for i, t := range tokens {
		last := i == len(tokens)-1
		switch n := node.(type) {
		case map[string]any:
			if last {
				delete(n, t)
				return
			}
			node = n[t]
		case []any:
			idx, err := strconv.Atoi(t)
			if err != nil || idx < 0 || idx >= len(n) {
				return
			}
			if last {
				return
			}
			node = n[idx]
		default:
			return
		}
	}
}
