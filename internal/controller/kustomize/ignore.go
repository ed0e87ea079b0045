package kustomize

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"

	kustomizev1 "github.com/windlass-dev/windlass/api/kustomize/v1"
	"github.com/windlass-dev/windlass/internal/reconcile"
)

// ignoreRule is a compiled spec.ignore entry.
type ignoreRule struct {
	paths  [][]string
	target *objectSelector
}

// objectSelector matches objects like a kustomize target selector: group,
// version and kind exactly, name and namespace as regular expressions,
// labels and annotations by selector.
type objectSelector struct {
	group, version, kind string
	name, namespace      *regexp.Regexp
	labels, annotations  labels.Selector
}

// compileIgnoreRules checks spec.ignore; an invalid rule stalls.
func compileIgnoreRules(rules []kustomizev1.IgnoreRule) ([]ignoreRule, error) {
	out := make([]ignoreRule, 0, len(rules))
	for i, r := range rules {
		var rule ignoreRule
		for _, p := range r.Paths {
			tokens, err := parsePointer(p)
			if err != nil {
				return nil, reconcile.Stall(kustomizev1.ReconciliationFailedReason, fmt.Errorf("spec.ignore[%d]: %w", i, err))
			}
			rule.paths = append(rule.paths, tokens)
		}
		if r.Target != nil {
			sel, err := compileSelector(*r.Target)
			if err != nil {
				return nil, reconcile.Stall(kustomizev1.ReconciliationFailedReason, fmt.Errorf("spec.ignore[%d].target: %w", i, err))
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

func compileSelector(s kustomizev1.Selector) (*objectSelector, error) {
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

// applyIgnoreRules removes the ignored fields from the objects to apply, so
// that the cluster's values of those fields are neither applied nor
// reverted.
func applyIgnoreRules(objs []*unstructured.Unstructured, rules []ignoreRule) {
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
