package generator

import (
	"errors"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"

	sourceextv1beta1 "github.com/windlass-dev/windlass/api/sourceextensions/v1beta1"
)

// ErrNoFolder is returned, wrapped, by Plan for a pathPattern that matches
// no folder: unlike its other errors, a commit may mend it.
var ErrNoFolder = errors.New("the pathPattern matches no folder")

// Planned is an artifact a generator makes: its spec, the placeholders of
// a pathPattern filled in, and the labels of its captures.
type Planned struct {
	Spec   sourceextv1beta1.OutputArtifact
	Labels map[string]string
}

// Plan returns the artifacts of spec, given the trees of its sources by
// alias: spec.artifacts, or, with a pathPattern, each of them once per
// folder the pattern matches. A folder whose name makes no valid label
// value or object name, and two folders that make one name, are errors.
func Plan(spec sourceextv1beta1.ArtifactGeneratorSpec, trees map[string]string) ([]Planned, error) {
	if spec.PathPattern == "" {
		out := make([]Planned, 0, len(spec.OutputArtifacts))
		for _, a := range spec.OutputArtifacts {
			out = append(out, Planned{Spec: a})
		}
		return out, nil
	}
	pattern, err := ParsePattern(spec.PathPattern)
	if err != nil {
		return nil, err
	}
	tree, ok := trees[pattern.Alias]
	if !ok {
		return nil, fmt.Errorf("pathPattern '%s': source alias '%s' not found", spec.PathPattern, pattern.Alias)
	}
	matches, err := pattern.Matches(tree)
	if err != nil {
		return nil, fmt.Errorf("pathPattern '%s': %w", spec.PathPattern, err)
	}
	if len(matches) == 0 {
		return nil, fmt.Errorf("%w of source '%s' ('%s')", ErrNoFolder, pattern.Alias, spec.PathPattern)
	}
	var out []Planned
	folderOf := map[string]string{}
	for _, m := range matches {
		labels := map[string]string{}
		for name, v := range m.Values {
			labels[name] = strings.ToLower(v)
		}
		for _, a := range spec.OutputArtifacts {
			rendered, err := render(a, m.Values)
			if err != nil {
				return nil, err
			}
			if errs := validation.IsDNS1123Subdomain(rendered.Name); len(errs) > 0 {
				return nil, fmt.Errorf("folder '%s' makes the artifact name '%s', which is not a valid object name: %s",
					m.Dir, rendered.Name, strings.Join(errs, "; "))
			}
			if dir, taken := folderOf[rendered.Name]; taken {
				return nil, fmt.Errorf("folders '%s' and '%s' both make the artifact name '%s'", dir, m.Dir, rendered.Name)
			}
			folderOf[rendered.Name] = m.Dir
			out = append(out, Planned{Spec: rendered, Labels: labels})
		}
	}
	return out, nil
}

// render fills in the placeholders of a's name (with lowercased values)
// and of its copy operations (with the values as the folders name them).
func render(a sourceextv1beta1.OutputArtifact, values map[string]string) (sourceextv1beta1.OutputArtifact, error) {
	out := *a.DeepCopy()
	var errs []error
	expand := func(s string, lower bool) string {
		v, err := Expand(s, values, lower)
		errs = append(errs, err)
		return v
	}
	out.Name = expand(a.Name, true)
	for i := range out.Copy {
		out.Copy[i].From = expand(out.Copy[i].From, false)
		out.Copy[i].To = expand(out.Copy[i].To, false)
	}
	return out, errors.Join(errs...)
}

// Rules returns the copy operations of a as rules.
func Rules(a sourceextv1beta1.OutputArtifact) []Rule {
	rules := make([]Rule, 0, len(a.Copy))
	for _, c := range a.Copy {
		rules = append(rules, Rule{From: c.From, To: c.To, Exclude: c.Exclude, Strategy: c.Strategy})
	}
	return rules
}
