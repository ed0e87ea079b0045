package sandbox

import (
	"path"
	"strconv"
	"strings"

	"helm.sh/helm/v4/pkg/chart/common"
	chart "helm.sh/helm/v4/pkg/chart/v2"
)

// Literal returns a copy of ch, dependencies included, whose templates
// print the files that Render returned for them and do nothing else:
// rendering it costs no more than copying them. The copy keeps the shape
// of ch (dependencies, aliases, conditions, schemas, files, CRDs), so that
// a Helm action given it processes it as it would process ch; a subchart
// that an alias makes appear under several names prints, under each, what
// was rendered under that name. Partials, and the templates of subcharts
// that were not rendered, become empty. Nothing of ch is changed.
//
// The returned Originals give the stored release its real templates back.
func Literal(ch *chart.Chart, rendered map[string]string) (*chart.Chart, *Originals) {
	orig := &Originals{byLiteral: map[*common.File]*common.File{}}
	if ch == nil {
		return nil, orig
	}
	return literalChart(ch, []string{ch.Name()}, rendered, orig), orig
}

// literalChart returns the literal copy of ch, which renders under each of
// paths (its full paths once its parent's dependencies are processed).
func literalChart(ch *chart.Chart, paths []string, rendered map[string]string, orig *Originals) *chart.Chart {
	out := *ch
	out.Templates = make([]*common.File, len(ch.Templates))
	for i, t := range ch.Templates {
		if t == nil {
			continue
		}
		lit := *t
		lit.Data = []byte(dispatchTemplate(t.Name, paths, rendered))
		out.Templates[i] = &lit
		orig.byLiteral[&lit] = t
	}
	deps := make([]*chart.Chart, 0, len(ch.Dependencies()))
	for _, dep := range ch.Dependencies() {
		var depPaths []string
		for _, p := range paths {
			for _, name := range namesOf(dep, ch) {
				depPaths = append(depPaths, p+"/charts/"+name)
			}
		}
		deps = append(deps, literalChart(dep, depPaths, rendered, orig))
	}
	out.SetDependencies(deps...)
	return &out
}

// namesOf returns the names that dep takes among the dependencies of
// parent: its own and its aliases.
func namesOf(dep, parent *chart.Chart) []string {
	names := []string{dep.Name()}
	if parent.Metadata == nil {
		return names
	}
	for _, d := range parent.Metadata.Dependencies {
		if d != nil && d.Name == dep.Name() && d.Alias != "" && d.Alias != dep.Name() {
			names = append(names, d.Alias)
		}
	}
	return names
}

// dispatchTemplate returns the template of the file name of a chart that
// renders under paths: it prints what was rendered for the path it is
// rendered under (Helm gives a template its full name as .Template.Name),
// and nothing under a path that was not rendered. A file rendered under
// one path only is printed as it is.
func dispatchTemplate(name string, paths []string, rendered map[string]string) string {
	var found []string
	for _, p := range paths {
		if _, ok := rendered[path.Join(p, name)]; ok {
			found = append(found, path.Join(p, name))
		}
	}
	if len(found) == 1 && len(paths) == 1 {
		return literalTemplate(rendered[found[0]])
	}
	var b strings.Builder
	for i, full := range found {
		if i == 0 {
			b.WriteString("{{ if eq .Template.Name " + strconv.Quote(full) + " }}")
		} else {
			b.WriteString("{{ else if eq .Template.Name " + strconv.Quote(full) + " }}")
		}
		b.WriteString(literalTemplate(rendered[full]))
	}
	if len(found) > 0 {
		b.WriteString("{{ end }}")
	}
	return b.String()
}

// literalTemplate returns a template that prints text: the only action
// that text could hold starts with "{{", so each one is printed by an
// action of its own.
func literalTemplate(text string) string {
	return strings.ReplaceAll(text, "{{", `{{"{{"}}`)
}

// Originals map the templates of a literal chart to those it was made
// from.
type Originals struct {
	byLiteral map[*common.File]*common.File
}

// Restore returns a copy of ch, a literal chart as a Helm action leaves
// it (its dependencies processed, its values set), with the templates it
// was made from in place of the literal ones: what a release stores.
// Nothing of ch is changed.
func (o *Originals) Restore(ch *chart.Chart) *chart.Chart {
	if ch == nil {
		return nil
	}
	out := *ch
	out.Templates = make([]*common.File, len(ch.Templates))
	for i, t := range ch.Templates {
		if original, ok := o.byLiteral[t]; ok {
			t = original
		}
		out.Templates[i] = t
	}
	deps := make([]*chart.Chart, 0, len(ch.Dependencies()))
	for _, dep := range ch.Dependencies() {
		deps = append(deps, o.Restore(dep))
	}
	out.SetDependencies(deps...)
	return &out
}
